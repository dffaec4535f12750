"""Specs the operator's tests share: a mesh with a broker connector and the routing resources
of the reference's queue-waypoint and link-routing scenarios."""

from __future__ import annotations

from typing import Any, Dict, List

from qdmesh_operator.model.mesh import MeshSpec, parse_mesh
from qdmesh_operator.model.routing import (
    RoutingSpec,
    parse_auto_link,
    parse_link_route,
    parse_vhost,
)

MESH_SPEC: Dict[str, Any] = {
    "size": 3,
    "image": "qdmesh/router:0.1.0",
    "connectors": [{"name": "broker", "host": "rabbit.messaging.svc", "port": 5672}],
    "listeners": [{"name": "edge", "port": 5673, "expose": "NodePort", "nodePort": 30673}],
    "addresses": [
        {"prefix": "queue/", "waypoint": True, "distribution": "balanced"},
        {"prefix": "broadcast/", "distribution": "multicast"},
    ],
    "policy": {"enableVhostPolicy": True, "maxConnections": 1000},
}


def mesh(spec: Dict[str, Any] | None = None, name: str = "demo", namespace: str = "messaging") -> MeshSpec:
    return parse_mesh(name, namespace, MESH_SPEC if spec is None else spec)


def routing(mesh_ref: str = "demo") -> List[RoutingSpec]:
    return [
        parse_link_route("orders", {"meshRef": mesh_ref, "prefix": "orders.", "connection": "broker"}),
        parse_auto_link(
            "q1-in", {"meshRef": mesh_ref, "address": "queue/q1", "direction": "in", "connection": "broker"}
        ),
        parse_auto_link(
            "q1-out", {"meshRef": mesh_ref, "address": "queue/q1", "direction": "out", "connection": "broker"}
        ),
        parse_vhost(
            "tenant-a",
            {
                "meshRef": mesh_ref,
                "hostname": "tenant-a.example.com",
                "maxConnections": 50,
                "allowUnknownUser": False,
                "groups": {
                    "admins": {
                        "users": ["alice", "bob"],
                        "remoteHosts": ["*"],
                        "sources": ["*"],
                        "targets": ["*"],
                    },
                    "$default": {"remoteHosts": ["*"], "maxSenders": 0},
                },
            },
        ),
    ]
