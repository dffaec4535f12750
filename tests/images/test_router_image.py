"""The router image, run by Docker the way the kubelet runs it (non-root, read-only root
filesystem, no capabilities): its version, Cyrus SASL, AMQP through a published port, and the
health endpoint the probes use. Needs the images from images/build.sh (CI: .ci/setup.d/35-images.sh)."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Iterator, Tuple

import pytest
from proton import Message
from proton.reactor import AtMostOnce
from proton.utils import BlockingConnection

from tests.prerequisites import require

from .dockerimages import docker, docker_running, ensure_image, package_version, run_args

pytestmark = pytest.mark.timeout(300)

CONFIG = """\
router {
    mode: standalone
    id: Router.Container
}
listener {
    host: 0.0.0.0
    port: 5672
    saslMechanisms: ANONYMOUS
}
listener {
    host: 0.0.0.0
    port: 8672
    http: true
}
"""


# Each router image, and the interpreter it runs the router on (platform.python_implementation()).
IMAGES = {"router": "CPython", "router-pypy": "PyPy"}


@pytest.fixture(scope="module", params=sorted(IMAGES))
def image_name(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    require(docker_running(), "a running Docker daemon (docker.io; images/build.sh starts it)")
    require(ensure_image(name), f"the {name} image (images/build.sh {name}; CI: .ci/setup.d/35-images.sh)")
    return name


@pytest.fixture(scope="module")
def router_image(image_name: str) -> str:
    return f"qdmesh/{image_name}:{package_version()}"


def test_version(image_name: str) -> None:
    result = docker(*run_args(image_name, "--version"))
    assert result.stdout.strip() == f"qdrouterd (qdmesh) {package_version()}"


def test_proton_has_cyrus_sasl_and_tls_and_runs_as_non_root(image_name: str, router_image: str) -> None:
    # python3 on the image's PATH is the interpreter qdrouterd runs on.
    probe = ("import json, os, platform, proton; print(json.dumps([proton.SASL.extended(), "
             "proton.SSL.present(), os.getuid(), platform.python_implementation()]))")
    result = docker("run", "--rm", "--network", "none", "--read-only", "--entrypoint", "python3",
                    router_image, "-c", probe)
    assert json.loads(result.stdout) == [True, True, 10001, IMAGES[image_name]]


@pytest.fixture
def running_router(router_image: str, tmp_path: Path) -> Iterator[Tuple[int, int]]:
    (tmp_path / "router.conf").write_text(CONFIG)
    tmp_path.chmod(0o755)
    (tmp_path / "router.conf").chmod(0o644)
    started = docker("run", "-d", "--read-only", "--tmpfs", "/tmp", "--cap-drop", "ALL",
                     "-p", "127.0.0.1::5672", "-p", "127.0.0.1::8672",
                     "-v", f"{tmp_path}:/etc/qdrouterd:ro", router_image, "-c", "/etc/qdrouterd/router.conf")
    container = started.stdout.strip()
    try:
        amqp = int(docker("port", container, "5672/tcp").stdout.split(":")[-1])
        http = int(docker("port", container, "8672/tcp").stdout.split(":")[-1])
        yield amqp, http
    finally:
        logs = docker("logs", container, check=False)
        docker("rm", "-f", container, check=False)
        print(logs.stdout[-2000:], logs.stderr[-2000:])


def _healthz(port: int) -> int:
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as reply:
                return int(reply.status)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def test_router_answers_amqp_and_health_in_a_read_only_container(running_router: Tuple[int, int],
                                                                  image_name: str) -> None:
    amqp, http = running_router
    assert _healthz(http) == 200
    with urllib.request.urlopen(f"http://127.0.0.1:{http}/metrics", timeout=5) as reply:
        metrics = reply.read().decode()
    assert f'python="{IMAGES[image_name]} 3.' in metrics, "qdmesh_router_info names the router's interpreter"
    assert 'proton_shim="compiled"' in metrics, "the image's router runs on the compiled proton shim"
    conn = BlockingConnection(f"127.0.0.1:{amqp}", timeout=30)
    try:
        receiver = conn.create_receiver("examples", credit=5)
        # Presettled: a blocking unsettled send would wait for an accept that this same thread
        # can only give after send returns.
        sender = conn.create_sender("examples", options=AtMostOnce())
        sender.send(Message(body="through the container"))
        assert receiver.receive(timeout=30).body == "through the container"
    finally:
        conn.close()
