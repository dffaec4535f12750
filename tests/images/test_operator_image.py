"""The operator image, run by Docker the way the chart's Deployment runs it (non-root, read-only
root filesystem with /tmp writable, no capabilities): its version, and that everything the
operator loads imports there. Needs the images from images/build.sh (CI: .ci/setup.d/35-images.sh)."""

from __future__ import annotations

import json

import pytest

from tests.prerequisites import require

from .dockerimages import docker, docker_running, ensure_image, package_version, run_args

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def operator_image() -> str:
    require(docker_running(), "a running Docker daemon (docker.io; images/build.sh starts it)")
    require(ensure_image("operator"), "the operator image (images/build.sh; CI: .ci/setup.d/35-images.sh)")
    return f"qdmesh/operator:{package_version()}"


def test_version_is_the_package_version(operator_image: str) -> None:
    result = docker(*run_args("operator", "--version"))
    assert result.stdout.strip() == f"qdmesh-operator {package_version()}"


def test_operator_loads_in_a_read_only_container_as_non_root(operator_image: str) -> None:
    """The handlers module pulls in kopf, the kubernetes client, proton (with TLS, for the
    routers' management) and the templates: none of it may need to write outside /tmp."""
    probe = ("import json, os, proton, qdmesh_operator.handlers; "
             "print(json.dumps([os.getuid(), os.getgid(), proton.SSL.present()]))")
    result = docker("run", "--rm", "--network", "none", "--read-only", "--tmpfs", "/tmp", "--cap-drop", "ALL",
                    "--entrypoint", "python3", operator_image, "-c", probe)
    assert json.loads(result.stdout) == [10001, 10001, True]


def test_a_bad_option_is_one_clear_line(operator_image: str) -> None:
    result = docker(*run_args("operator", "--health-port", "70000"), check=False)
    assert result.returncode == 2
    assert "--health-port: 70000 is not a port number" in result.stderr
    assert "Traceback" not in result.stderr
