"""kubectl-qdstat's command-line and kubeconfig mistakes: one line, no traceback, no cluster needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from qdmesh_kubectl.args import build_parser
from qdmesh_kubectl.qdstat import main
from qdrouter.tools.qdstat_views import VIEWS

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: someone
  user: {token: "t"}
contexts:
- name: team
  context: {cluster: nowhere, user: someone, namespace: team-ns}
current-context: team
"""


def test_missing_kubeconfig(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["--kubeconfig", str(tmp_path / "none"), "demo"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"kubectl-qdstat: error: cannot use the kubeconfig ({tmp_path / 'none'})")
    assert "Traceback" not in err


def test_unknown_target_kind(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "config").write_text(KUBECONFIG)
    assert main(["--kubeconfig", str(tmp_path / "config"), "deployment/demo"]) == 2
    assert "unknown target 'deployment/demo': give a RouterMesh name or pod/NAME" in capsys.readouterr().err


def test_unreachable_api_server_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "config").write_text(KUBECONFIG)
    assert main(["--kubeconfig", str(tmp_path / "config"), "demo"]) == 1
    err = capsys.readouterr().err
    # The context's namespace is used when -n is not given.
    assert err.startswith("kubectl-qdstat: error: reading RouterMesh 'demo'") and err.count("\n") == 1
    assert "cannot reach the Kubernetes API server" in err and "/namespaces/team-ns/" in err


@pytest.mark.parametrize("argv, says", [
    (["demo", "--map", "-l"], "not allowed with"),
    (["demo", "--limit", "0"], "must be greater than 0"),
    ([], "required: MESH | pod/NAME"),
])
def test_usage_errors(argv: list, says: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert says in capsys.readouterr().err


def test_every_qdstat_view_has_an_option() -> None:
    """Any qdstat view, including ones qdstat gains later: the options come from qdstat's."""
    shown = {action.const for action in build_parser()._actions if action.dest == "show"}
    assert shown == set(VIEWS) | {"map", "edge-routers"}
    assert build_parser().parse_args(["demo", "--nodes"]).show == "nodes"
    assert build_parser().parse_args(["demo", "-n", "ns"]).namespace == "ns"


def test_without_the_kubernetes_client_one_line_names_the_extra(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """A plugin installed without the [kubectl] extra says what to install, not a traceback."""
    import importlib.util
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "kubernetes" else real_find_spec(name, *a))
    assert main(["demo"]) == 1
    err = capsys.readouterr().err
    assert err == ("kubectl-qdstat: needs the qdmesh package's [kubectl] extra (kubernetes not "
                   "installed): in a clone of qdmesh, pip install '.[kubectl]'\n")
