"""Reading and writing the Secrets the operator makes (its CAs, certificates, grant tokens):
decoded data and the resourceVersion read, so a replace carries it and two writers cannot
both win."""

from __future__ import annotations

import base64
from typing import Any, Dict, Mapping, Tuple

from kubernetes.client.rest import ApiException

Stored = Tuple[Dict[str, bytes], str, Dict[str, str]]


def read(core: Any, namespace: str, name: str) -> Stored | None:
    """(data, resourceVersion, annotations) of a Secret, or None if there is none."""
    try:
        secret = core.read_namespaced_secret(name, namespace)
    except ApiException as e:
        if e.status == 404:
            return None
        raise
    data = {k: base64.b64decode(v) for k, v in (secret.data or {}).items()}
    return data, str(secret.metadata.resource_version or ""), dict(secret.metadata.annotations or {})


def body(namespace: str, name: str, data: Mapping[str, bytes], *, labels: Mapping[str, str],
         owner: Dict[str, Any] | None, annotations: Mapping[str, str] | None = None,
         type_: str = "Opaque") -> Dict[str, Any]:
    meta: Dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels)}
    if annotations:
        meta["annotations"] = dict(annotations)
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": type_,
            "data": {k: base64.b64encode(v).decode() for k, v in sorted(data.items())}}


def create(core: Any, secret: Dict[str, Any]) -> bool:
    """Create a Secret; False if one of that name appeared meanwhile."""
    try:
        core.create_namespaced_secret(secret["metadata"]["namespace"], secret)
    except ApiException as e:
        if e.status == 409:
            return False
        raise
    return True


def replace(core: Any, secret: Dict[str, Any], resource_version: str) -> None:
    """Replace a Secret read at ``resource_version`` (409 if someone wrote it since)."""
    secret = {**secret, "metadata": {**secret["metadata"], "resourceVersion": resource_version}}
    core.replace_namespaced_secret(secret["metadata"]["name"], secret["metadata"]["namespace"], secret)


def delete(core: Any, namespace: str, name: str) -> None:
    try:
        core.delete_namespaced_secret(name, namespace)
    except ApiException as e:
        if e.status != 404:
            raise
