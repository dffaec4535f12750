"""The web console the operator serves for a RouterMesh (spec.console): turned on for the shared
mesh, its pod comes up from the router image, shows every router and every inter-router link
of the mesh through a port-forward to its Service (in headless Chromium too), is not taken for
a router, and goes away when turned off."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict

from kubernetes import client

from tests.console.browser import available, start_browser
from tests.prerequisites import require

from .kube import describe_namespace, eventually
from .mesh_fixtures import MESH, MeshState, Timing, mesh_whole
from .product import deployment_ready, http_forward, patch_resource, read_resource, router_pods

CONSOLE = f"{MESH}-console"


def get_json(url: str) -> Dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return dict(json.loads(reply.read()))


def console_gone(k8s: Any, namespace: str) -> bool:
    try:
        client.AppsV1Api(k8s).read_namespaced_deployment(CONSOLE, namespace)
    except client.ApiException as e:
        return e.status == 404
    return False


def test_operator_serves_the_mesh_console(mesh: MeshState, k8s: Any, core: Any, e2e_kubeconfig: Path,
                                          timing: Timing) -> None:
    mesh.require_ready()
    ns = mesh.namespace
    routers = router_pods(k8s, ns, MESH)  # name -> UID and restarts
    assert sorted(routers) == sorted(mesh.routers)
    started = time.monotonic()
    patch_resource(k8s, ns, "routermeshes", MESH, {"spec": {"console": {"enabled": True}}})
    try:
        eventually(lambda: deployment_ready(k8s, ns, CONSOLE), 120, f"Deployment {CONSOLE} ready",
                   describe=lambda: describe_namespace(core, ns))
        timing("console enabled -> its pod ready", time.monotonic() - started)
        # Not a router: the mesh still has exactly its routers, untouched, and stays Ready.
        assert router_pods(k8s, ns, MESH) == routers
        eventually(lambda: mesh_whole(k8s, ns, mesh.size), 60, "the mesh Ready with its console",
                   describe=lambda: str(read_resource(k8s, ns, "routermeshes", MESH).get("status")))
        full_mesh_links = mesh.size * (mesh.size - 1) // 2
        with http_forward(e2e_kubeconfig, ns, f"svc/{CONSOLE}", 8080) as url:
            def everything_shown() -> bool:
                view = get_json(url + "/api/mesh")
                shown = sorted(r["id"] for r in view["routers"])
                return (not view.get("error") and shown == sorted(mesh.routers)
                        and all(r["reachable"] for r in view["routers"])
                        and len(view["edges"]) == full_mesh_links)

            eventually(everything_shown, 60, "every router and inter-router link in the console",
                       describe=lambda: json.dumps(get_json(url + "/api/mesh"))[:2000])
            detail = get_json(f"{url}/api/router?id={mesh.routers[0]}")
            assert [t["title"] for t in detail["tables"]][4] == "Routers in the Network"

            require(available(), "chromium, chromium-driver and selenium (.ci/setup.d/70-chromium.sh)")
            session = start_browser()
            browser = next(session)
            try:
                browser.get(url + "/")
                eventually(lambda: sorted(browser.execute_script(
                    "return [...document.querySelectorAll('#topology g.router')].map(g => g.dataset.router)"))
                    == sorted(mesh.routers), 30, "every router drawn in Chromium")
                edges = browser.execute_script("return document.querySelectorAll('#topology g.edge').length")
                assert edges == full_mesh_links
            finally:
                session.close()
    finally:
        patch_resource(k8s, ns, "routermeshes", MESH, {"spec": {"console": {"enabled": False}}})
        eventually(lambda: console_gone(k8s, ns), 60, f"Deployment {CONSOLE} deleted")
    services = client.CoreV1Api(k8s).list_namespaced_service(ns, field_selector=f"metadata.name={CONSOLE}")
    assert not services.items
    # The routers were never touched: same pods, no restarts, the mesh whole.
    assert router_pods(k8s, ns, MESH) == routers
    eventually(lambda: mesh_whole(k8s, ns, mesh.size), 60, "the mesh Ready after the console left",
               describe=lambda: str(read_resource(k8s, ns, "routermeshes", MESH).get("status")))
