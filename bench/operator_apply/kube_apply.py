"""Operator benchmark through Kubernetes: from creating a LinkRoute or AutoLink in a real API
server to it being live on every router of a local 5-router mesh.  The whole path is timed:
the API write, the watch event reaching kopf, the reconciliation (server-side apply of the
mesh's objects, listing its routing resources, management operations on every router) and the
routers' own answers.  Needs the binaries from tests/e2e/cluster/build.sh.

    python -m bench.operator_apply.kube_apply --rounds 10
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

import yaml

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.operator_apply.live_apply import live_everywhere, start_mesh, summary  # noqa: E402
from qdrouter.tools.management_client import ManagementClient  # noqa: E402
from tests.kube.controlplane import start_control_plane  # noqa: E402
from tests.router.routerproc import free_port  # noqa: E402

G, V = "qdmesh.io", "v1alpha1"
LINK_ROUTE = "org.apache.qpid.dispatch.router.config.linkRoute"
AUTO_LINK = "org.apache.qpid.dispatch.router.config.autoLink"


def wait(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        time.sleep(0.01)


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--routers", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args(argv)
    from kubernetes import client, config

    with tempfile.TemporaryDirectory(prefix="qdmesh-bench-kube-") as tmp:
        work = Path(tmp)
        plane = start_control_plane(work / "plane")
        mesh = start_mesh(work / "mesh", args.routers)
        operator = None
        try:
            api = config.new_client_from_config(config_file=plane.kubeconfig)
            ext = client.ApiextensionsV1Api(api)
            for path in sorted((REPO / "crds").glob("*.yaml")):
                ext.create_custom_resource_definition(yaml.safe_load(path.read_text()))
            time.sleep(2)  # CRDs established
            client.CoreV1Api(api).create_namespace({"metadata": {"name": "bench"}})
            names = sorted(mesh.routers)
            urls = {f"bench/demo-{i}": mesh.routers[n].url for i, n in enumerate(names)}
            (work / "urls.json").write_text(json.dumps(urls))
            env = {**plane.env(), "QDMESH_ROUTER_URLS": str(work / "urls.json")}
            operator = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "qdmesh_operator.main",
                    "-n",
                    "bench",
                    "--health-port",
                    str(free_port()),
                    "--metrics-port",
                    "0",
                    "--log-level",
                    "warning",
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=open(work / "operator.log", "w"),
            )
            custom = client.CustomObjectsApi(api)

            def create(plural: str, kind: str, name: str, spec: Dict[str, Any]) -> None:
                custom.create_namespaced_custom_object(
                    G,
                    V,
                    "bench",
                    plural,
                    {"apiVersion": f"{G}/{V}", "kind": kind, "metadata": {"name": name}, "spec": spec},
                )

            create(
                "routermeshes",
                "RouterMesh",
                "demo",
                {
                    "size": args.routers,
                    "image": "qdmesh/router:bench",
                    "connectors": [{"name": "broker", "host": "127.0.0.1", "port": 1}],
                },
            )
            checkers = {rid: ManagementClient(url, timeout=5) for rid, url in urls.items()}
            wait(
                lambda: live_everywhere(
                    checkers, "org.apache.qpid.dispatch.connector", "qdmesh/connector/broker"
                ),
                60,
                "mesh reconciled",
            )
            timings: Dict[str, List[float]] = {"LinkRoute": [], "AutoLink": []}
            for i in range(args.rounds):
                start = time.monotonic()
                create(
                    "linkroutes",
                    "LinkRoute",
                    f"lr{i}",
                    {"meshRef": "demo", "prefix": f"lr{i}.", "connection": "broker", "direction": "in"},
                )
                wait(
                    lambda i=i: live_everywhere(checkers, LINK_ROUTE, f"qdmesh/linkRoute/lr{i}-in"),
                    30,
                    "link route",
                )
                timings["LinkRoute"].append(time.monotonic() - start)
                start = time.monotonic()
                create(
                    "autolinks",
                    "AutoLink",
                    f"al{i}",
                    {
                        "meshRef": "demo",
                        "address": f"queue/al{i}",
                        "direction": "out",
                        "connection": "broker",
                    },
                )
                wait(
                    lambda i=i: live_everywhere(checkers, AUTO_LINK, f"qdmesh/autoLink/al{i}"),
                    30,
                    "auto-link",
                )
                timings["AutoLink"].append(time.monotonic() - start)
            for checker in checkers.values():
                checker.close()
            print(
                json.dumps(
                    {
                        "routers": args.routers,
                        "rounds": args.rounds,
                        "api_to_live": {k: summary(v) for k, v in timings.items()},
                    },
                    indent=2,
                )
            )
        finally:
            if operator is not None:
                operator.terminate()
                try:
                    operator.wait(20)
                except subprocess.TimeoutExpired:
                    operator.kill()
            for router in mesh.routers.values():
                router.stop(check=False)
            plane.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
