"""Whether the router in the images supports edge routers (``router { mode: edge }``, listener
and connector ``role: edge``).  The images are built from this checkout's router package, so
the probe starts that package with an edge config: a router that refuses edge mode exits at
once ("is not supported"), one that supports it keeps running."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Tuple

REPO = Path(__file__).resolve().parents[2]
PROBE_CONF = """router {
    mode: edge
    id: edge-probe
}
listener {
    host: 127.0.0.1
    port: 0
}
connector {
    name: uplink
    host: 127.0.0.1
    port: 1
    role: edge
}
"""


def router_supports_edge_mode(seconds: float = 3.0) -> Tuple[bool, str]:
    """(supported, why): the router package started with an edge config, still running after
    ``seconds`` (then stopped) or exited with its reason."""
    with tempfile.TemporaryDirectory(prefix="qdmesh-edge-probe-") as tmp:
        conf = Path(tmp) / "edge.conf"
        conf.write_text(PROBE_CONF)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(REPO / "router"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        proc = subprocess.Popen([sys.executable, "-m", "qdrouter", "-c", str(conf)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _, err = proc.communicate(timeout=seconds)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            return True, "the router package runs an edge router"
        lines = [line for line in (err or "").splitlines() if line.strip()]
        return False, ("the router package refuses an edge router config (router mode edge, "
                       f"connector role edge): {lines[-1] if lines else f'exit status {proc.returncode}'}")
