"""spec.console: the operator's web console of a RouterMesh.  The rendered objects keep the
console pod apart from the routers, and the rendered container command, run as a real process
against a real router, serves the console (its probe path answers and it reads the mesh)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from typing import Any, Dict, List

import pytest

from qdmesh_operator import contract
from qdmesh_operator.desired.state import mesh_state
from qdmesh_operator.model.errors import SpecError
from qdmesh_operator.model.mesh import parse_mesh
from qdmesh_operator.render import manifests
from qdmesh_operator.render.conf import render_all
from tests.operator.specs import MESH_SPEC
from tests.router.routerproc import RouterFactory, free_port, router_env

OWNER = {"metadata": {"name": "demo", "uid": "0b7c6a52-1111-2222-3333-444455556666"}}


def objects(console: Dict[str, Any] | None) -> List[Dict[str, Any]]:
    spec = dict(MESH_SPEC) if console is None else {**MESH_SPEC, "console": console}
    m = parse_mesh("demo", "messaging", spec)
    return manifests.mesh_objects(m, render_all(mesh_state(m, [])), owner=manifests.owner_reference(OWNER))


def matches(selector: Dict[str, str], labels: Dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def test_no_console_unless_asked() -> None:
    for console in (None, {"enabled": False}):
        made = objects(console)
        assert not [o for o in made if o["kind"] == "Deployment"]
        assert "demo-console" not in {o["metadata"]["name"] for o in made}


def test_console_objects_stay_apart_from_the_routers() -> None:
    made = objects({"enabled": True, "intervalSeconds": 5, "resources": {"limits": {"memory": "128Mi"}}})
    assert made[-1]["kind"] == "StatefulSet"  # still applied last
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in made}
    deployment = by_name[("Deployment", "demo-console")]
    service = by_name[("Service", "demo-console")]
    for obj in (deployment, service):
        assert obj["metadata"]["ownerReferences"][0]["name"] == "demo"
        assert obj["metadata"]["labels"] == contract.console_labels("demo")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert matches(deployment["spec"]["selector"]["matchLabels"], pod_labels)
    assert matches(service["spec"]["selector"], pod_labels)
    # Nothing that selects router pods selects the console's: router Services, the PDB, the
    # StatefulSet, the operator's pod listing and the chart's PodMonitor.
    router_selectors = [o["spec"]["selector"] for o in made if o["kind"] == "Service" and o is not service]
    router_selectors += [by_name[("PodDisruptionBudget", "demo")]["spec"]["selector"]["matchLabels"],
                         by_name[("StatefulSet", "demo")]["spec"]["selector"]["matchLabels"],
                         contract.selector("demo"), {"app.kubernetes.io/name": "qdmesh-router"}]
    assert router_selectors and not [s for s in router_selectors if matches(s, pod_labels)]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["qdmesh", "console", "--router", "demo.messaging.svc:5672",
                                     "--host", "0.0.0.0", "--port", "8080", "--interval", "5"]
    assert container["resources"] == {"limits": {"memory": "128Mi"}}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert service["spec"]["ports"][0]["port"] == 8080


@pytest.mark.parametrize("console, field, words", [
    ({"enabled": "yes"}, "spec.console.enabled", "true or false"),
    ({"intervalSeconds": 0}, "spec.console.intervalSeconds", "at least 1"),
    ({"resources": "big"}, "spec.console.resources", "object"),
])
def test_bad_console_settings_name_the_field(console: Dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_mesh("m", "ns", {"console": console})
    assert caught.value.field == field and words in str(caught.value)


def test_rendered_console_command_serves_a_real_router(router_factory: RouterFactory) -> None:
    router = router_factory(router_id="demo-0")
    (deployment,) = [o for o in objects({"enabled": True, "intervalSeconds": 1}) if o["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    command = list(container["command"])
    assert command[0] == "qdmesh"
    # The pod's own command, with the cluster's names swapped for this machine's.
    port = free_port()
    command[command.index("--router") + 1] = f"127.0.0.1:{router.port}"
    command[command.index("--host") + 1] = "127.0.0.1"
    command[command.index("--port") + 1] = str(port)
    proc = subprocess.Popen([sys.executable, "-m", "qdrouter.local_mesh", *command[1:]],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=router_env(), text=True)
    try:
        probe = container["readinessProbe"]["httpGet"]["path"]
        deadline = time.monotonic() + 20
        seen: List[str] = []
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{probe}", timeout=2) as page:
                    assert page.status == 200
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/mesh", timeout=2) as reply:
                    seen = [r["id"] for r in json.loads(reply.read())["routers"]]
                if seen == ["demo-0"]:
                    break
            except OSError:
                pass
            time.sleep(0.3)
        assert seen == ["demo-0"], f"the console never showed the router (saw {seen})"
    finally:
        proc.terminate()
        output = proc.communicate(timeout=10)[0]
    assert proc.returncode == 0 and "Traceback" not in output, output
