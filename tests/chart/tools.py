"""The chart tests' tools: helm, kubeconform (both `go install`ed by .ci/setup.d/30-helm-tools.sh)
and offline Kubernetes JSON schemas made from the ones kubernetes-validate bundles."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, Iterable, List

import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "qdmesh"
K8S_VERSION = "1.36.0"


def find_tool(name: str) -> str | None:
    """On PATH, or where `go install` puts it."""
    found = shutil.which(name)
    if found:
        return found
    gopath = os.environ.get("GOPATH") or str(Path.home() / "go")
    candidate = Path(gopath) / "bin" / name
    return str(candidate) if os.access(candidate, os.X_OK) else None


def bundled_schema_dir() -> Path | None:
    """kubernetes-validate's schemas for K8S_VERSION (they $ref a shared _definitions.json)."""
    try:
        import kubernetes_validate
    except ImportError:
        return None
    bundle = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    path = bundle / f"v{K8S_VERSION}-local-strict"
    return path if (path / "_definitions.json").exists() else None


def kind_file(kind: str, api_version: str) -> str:
    """kubeconform's file name for a kind: deployment-apps-v1.json, service-v1.json, ..."""
    group, _, version = api_version.rpartition("/")
    suffix = f"-{group.split('.')[0]}-{version}" if group else f"-{version}"
    return f"{kind.lower()}{suffix}.json"


class SchemaStore:
    """A kubeconform schema directory, filled on demand: standalone Kubernetes schemas (the
    shared definitions copied into each file under $defs) and JSON schemas of the qdmesh CRDs."""

    def __init__(self, root: Path, bundled: Path) -> None:
        self.root = root
        self.dir = root / f"v{K8S_VERSION}-standalone-strict"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.bundled = bundled
        self._defs: Dict[str, Any] | None = None

    @property
    def location(self) -> str:
        return str(self.root) + "/{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}/" \
            "{{ .ResourceKind }}{{ .KindSuffix }}.json"

    def _definitions(self) -> Dict[str, Any]:
        if self._defs is None:
            text = (self.bundled / "_definitions.json").read_text()
            self._defs = json.loads(text.replace("/api/_definitions.json#", "#"))["$defs"]
        return self._defs

    def add_kubernetes_kind(self, kind: str, api_version: str) -> bool:
        name = kind_file(kind, api_version)
        target = self.dir / name
        if target.exists():
            return True
        source = self.bundled / name
        if not source.exists():
            return False
        schema = json.loads(source.read_text().replace("/api/_definitions.json#", "#"))
        schema["$defs"] = self._definitions()
        target.write_text(json.dumps(schema))
        return True

    def add_crd(self, crd: Dict[str, Any]) -> None:
        """Each served version of a CRD as a strict JSON schema, as the API server would prune."""
        spec = crd["spec"]
        for version in spec["versions"]:
            schema = strict(version["schema"]["openAPIV3Schema"])
            schema.setdefault("properties", {})
            schema["properties"].update({
                "apiVersion": {"type": "string", "enum": [f"{spec['group']}/{version['name']}"]},
                "kind": {"type": "string", "enum": [spec["names"]["kind"]]},
                "metadata": {"type": "object"},
            })
            schema["required"] = sorted(set(schema.get("required", [])) | {"apiVersion", "kind", "metadata"})
            name = kind_file(spec["names"]["kind"], f"{spec['group']}/{version['name']}")
            (self.dir / name).write_text(json.dumps(schema))


def strict(schema: Any) -> Any:
    """An OpenAPI v3 structural schema as JSON schema: unknown fields refused (the API server
    prunes them, which would hide a typo), Kubernetes extensions dropped."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items() if not k.startswith("x-kubernetes-")}
    if schema.get("nullable"):
        out.pop("nullable")
        out["type"] = [schema.get("type", "object"), "null"] if "type" in schema else out.get("type")
    if (schema.get("type") == "object" and "properties" in schema and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    return out


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    tool = find_tool("helm")
    assert tool is not None
    return subprocess.run([tool, *args], capture_output=True, text=True, check=check, timeout=120)


def render(values_files: Iterable[Path] = (), *extra: str, namespace: str = "qdmesh-system"
           ) -> List[Dict[str, Any]]:
    args = ["template", "qd", str(CHART), "--namespace", namespace, "--include-crds",
            "--kube-version", K8S_VERSION]
    for f in values_files:
        args += ["--values", str(f)]
    out = helm(*args, *extra).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def kubeconform(store: SchemaStore, documents: List[Dict[str, Any]], skip: Iterable[str] = ()
                ) -> subprocess.CompletedProcess:
    for doc in documents:
        if doc["kind"] == "CustomResourceDefinition":
            store.add_crd(doc)
        store.add_kubernetes_kind(doc["kind"], doc["apiVersion"])
    tool = find_tool("kubeconform")
    assert tool is not None
    args = [tool, "-strict", "-summary", "-kubernetes-version", K8S_VERSION,
            "-schema-location", store.location]
    if skip:
        args += ["-skip", ",".join(skip)]
    text = yaml.safe_dump_all(documents)
    return subprocess.run([*args, "-"], input=text, capture_output=True, text=True, timeout=120)
