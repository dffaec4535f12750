"""What the routers of a linked mesh get: each link's sslProfile (the files of its credentials)
and one inter-router connector on each of the first ``connections`` routers, to the remote
endpoints in turn.  All of it live (created through management), so a link is added and
removed without a restart: the files come from one Secret per mesh, ``<mesh>-links``, mounted
on every router at ``LINKS_DIR`` (a mounted Secret's new keys reach a running pod).  Pure."""

from __future__ import annotations

import base64
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from .. import contract
from ..model.entities import Entity, managed_name
from ..model.mesh import MeshSpec
from .credentials import Credentials
from .spec import LinkSpec

LINKS_DIR = "/etc/qdmesh/links"
VOLUME = "links"
Linked = Tuple[LinkSpec, Credentials]


def links_secret_name(mesh: str) -> str:
    return contract.mesh_links_secret(mesh)


def profile_name(link: str) -> str:
    return managed_name("linkTls", link)


def connector_name(link: str) -> str:
    return managed_name("link", link)


def is_link_entity(name: str) -> bool:
    """Whether an entity of a router is a MeshLink's (its failures are the link's to report)."""
    return name.startswith((profile_name(""), connector_name("")))


def _key(link: str, file: str) -> str:
    return f"{link}-{file}"


def link_profile(link: str, directory: str) -> Entity:
    return Entity("sslProfile", profile_name(link),
                  {"caCertFile": f"{directory}/{_key(link, 'ca.crt')}",
                   "certFile": f"{directory}/{_key(link, 'tls.crt')}",
                   "privateKeyFile": f"{directory}/{_key(link, 'tls.key')}"})


def link_entities(mesh: MeshSpec, links: Sequence[Linked], directory: str | None = None
                  ) -> Dict[str, List[Entity]]:
    """Router id -> the link entities it gets (routers 0..connections-1 of each link), their
    files in ``directory`` (LINKS_DIR, where the routers mount the links' Secret)."""
    directory = directory or LINKS_DIR
    out: Dict[str, List[Entity]] = {rid: [] for rid in mesh.router_ids()}
    for spec, found in sorted(links, key=lambda x: x[0].name):
        if not found.endpoints:
            continue
        for ordinal in range(spec.routers(mesh.size)):
            endpoint = found.endpoints[ordinal % len(found.endpoints)]
            attrs: Dict[str, Any] = {"host": endpoint.host, "port": str(endpoint.port),
                                     "role": "inter-router", "cost": spec.cost,
                                     "sslProfile": profile_name(spec.name),
                                     "saslMechanisms": "EXTERNAL", "verifyHostname": spec.verify_hostname}
            rid = contract.router_id(mesh.name, ordinal)
            out[rid].extend((link_profile(spec.name, directory),
                             Entity("connector", connector_name(spec.name), attrs)))
    return out


def links_secret_data(links: Sequence[Linked]) -> Dict[str, str]:
    """The ``<mesh>-links`` Secret's data (base64): every link's three files."""
    data: Dict[str, str] = {}
    for spec, found in links:
        for file, text in found.files().items():
            data[_key(spec.name, file)] = base64.b64encode(text.encode()).decode()
    return data


def links_secret(mesh: MeshSpec, owner: Mapping[str, Any], links: Sequence[Linked]) -> Dict[str, Any]:
    """The Secret mounted on the mesh's routers (owned by the RouterMesh; empty without links)."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": links_secret_name(mesh.name), "namespace": mesh.namespace,
                         "labels": {"app.kubernetes.io/managed-by": contract.MANAGER,
                                    "qdmesh.io/mesh": mesh.name},
                         "ownerReferences": [dict(owner)] if owner else []},
            "data": links_secret_data(links)}


def volume(mesh: str) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(the volume, its mount) of the routers' container."""
    return ({"name": VOLUME, "secret": {"secretName": links_secret_name(mesh), "optional": True}},
            {"name": VOLUME, "mountPath": LINKS_DIR, "readOnly": True})
