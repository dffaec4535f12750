"""The built images, for tests that run them: present in the Docker daemon, or loaded from the
archives images/build.sh saves under build/images/."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import List

from tests import reaper

REPO = Path(__file__).resolve().parents[2]


def package_version() -> str:
    match = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert match
    return match.group(1)


def docker(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    if args and args[0] == "run":
        # A container is the Docker daemon's child, not ours: labelled with the test run, the
        # reaper removes it should the run end before the test does (tests/reaper.py).
        args = ("run", *reaper.container_labels(), *args[1:])
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=check)


def docker_running() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return docker("info", timeout=20, check=False).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def ensure_image(name: str) -> bool:
    """Whether image qdmesh/NAME:VERSION is in the daemon (loading its archive if needed)."""
    tag = f"qdmesh/{name}:{package_version()}"
    if docker("image", "inspect", tag, check=False).returncode == 0:
        return True
    archive = REPO / "build" / "images" / f"qdmesh-{name}-{package_version()}.tar"
    if archive.exists():
        docker("load", "-i", str(archive), timeout=300)
    return docker("image", "inspect", tag, check=False).returncode == 0


def run_args(image: str, *args: str) -> List[str]:
    return ["run", "--rm", "--network", "none", "--read-only", "--tmpfs", "/tmp", "--cap-drop", "ALL",
            f"qdmesh/{image}:{package_version()}", *args]
