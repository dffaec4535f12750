"""The krew package: manifest and archive agree, and kubectl finds and runs the plugin."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from tests.prerequisites import require

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("krew")
    subprocess.run(["bash", str(REPO / "kubectl" / "krew" / "package.sh"), "https://example.test/dl"],
                   check=True, capture_output=True, env={**os.environ, "QDMESH_KREW_OUT": str(out)})
    return out


def test_manifest_names_the_archive_and_its_sha256(package: Path) -> None:
    manifest = yaml.safe_load((package / "qdstat.yaml").read_text())
    assert manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert manifest["kind"] == "Plugin" and manifest["metadata"]["name"] == "qdstat"
    [platform] = manifest["spec"]["platforms"]
    archive = package / platform["uri"].rsplit("/", 1)[1]
    assert platform["uri"] == f"https://example.test/dl/{archive.name}"
    assert platform["sha256"] == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert platform["bin"] == "kubectl-qdstat"
    with tarfile.open(archive) as tar:
        member = tar.getmember("kubectl-qdstat")
        assert member.mode & 0o111


def test_kubectl_finds_and_runs_the_plugin(package: Path, tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    require(kubectl is not None, "kubectl")
    with tarfile.open(next(package.glob("*.tar.gz"))) as tar:
        tar.extractall(tmp_path)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "QDMESH_PYTHON": sys.executable}
    listed = subprocess.run([str(kubectl), "plugin", "list"], capture_output=True, text=True, env=env)
    assert str(tmp_path / "kubectl-qdstat") in listed.stdout
    result = subprocess.run([str(kubectl), "qdstat", "--help"], capture_output=True, text=True, env=env,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert "usage: kubectl qdstat [MESH | pod/NAME]" in result.stdout
    assert "--map" in result.stdout and "--context" in result.stdout


def test_launcher_says_how_to_install_when_the_package_is_missing(package: Path, tmp_path: Path) -> None:
    with tarfile.open(next(package.glob("*.tar.gz"))) as tar:
        tar.extractall(tmp_path)
    # A PATH with no Python at all: the launcher must explain, not fail obscurely.
    env = {"PATH": "/nonexistent", "QDMESH_PYTHON": "/nonexistent/python"}
    result = subprocess.run(["/bin/sh", str(tmp_path / "kubectl-qdstat")], capture_output=True, text=True,
                            env=env)
    assert result.returncode == 1
    assert "pip install qdmesh" in result.stderr
