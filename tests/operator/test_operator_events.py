"""The operator's Events (status/events.py) against a REAL API server: posted with the object
they are about, and in a namespace being deleted (which takes no new object) refused without
a retry, said once at INFO, never as an error."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from qdmesh_operator.status.events import EventPoster
from qdmesh_operator.status.report import Event, ref
from tests.kube.controlplane import ControlPlane
from tests.operator.kube_operator import G, V, api_namespace, eventually

pytestmark = pytest.mark.timeout(120)


def test_events_are_posted_and_a_namespace_being_deleted_is_said_once(
        crds: ControlPlane, caplog: pytest.LogCaptureFixture) -> None:
    from kubernetes import client

    api, ns = api_namespace(crds, "going")
    core: Any = client.CoreV1Api(api)
    custom = client.CustomObjectsApi(api)
    # An object that holds the namespace in Terminating (a finalizer nobody removes yet).
    body = custom.create_namespaced_custom_object(G, V, ns, "linkroutes", {
        "apiVersion": f"{G}/{V}", "kind": "LinkRoute",
        "metadata": {"name": "held", "finalizers": ["test.qdmesh.io/hold"]},
        "spec": {"meshRef": "m", "prefix": "a.", "containerId": "c"}})
    poster = EventPoster(core)
    assert poster.post(Event(ref(body), "Normal", "Applied", "2 live changes"))
    posted = [e for e in core.list_namespaced_event(ns).items if e.reason == "Applied"]
    assert [(e.involved_object.name, e.involved_object.kind, e.type, e.message, e.source.component)
            for e in posted] == [("held", "LinkRoute", "Normal", "2 live changes", "qdmesh-operator")]

    core.delete_namespace(ns)
    eventually(lambda: core.read_namespace(ns).status.phase == "Terminating", 30, "namespace Terminating")
    try:
        with caplog.at_level(logging.INFO, logger="qdmesh.operator"):
            for _ in range(3):
                assert not poster.post(Event(ref(body), "Warning", "RoutersLost", "1 of 3 routers lost"))
        said = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "qdmesh.operator"]
        assert said == [(logging.INFO, f"not posting Events in namespace {ns}: it is being deleted")]
    finally:
        custom.patch_namespaced_custom_object(G, V, ns, "linkroutes", "held",
                                              {"metadata": {"finalizers": None}},
                                              _content_type="application/merge-patch+json")
