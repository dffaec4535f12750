"""Each router's qdrouterd.conf, rendered with jinja2 from a template kept in the package.

Every value goes through ``conf_value`` (the template's autoescape for the config syntax):
strings are written as JSON-quoted strings, which the config parser reads back exactly, so no
value can end a line, open a section or start a comment.  Attribute and section names must be
plain identifiers.  The result is parsed with the router's own config parser before it is
used: a config the router would refuse never reaches a ConfigMap.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List

import jinja2

from qdrouter.config import ConfigError, parse_config_text

from .. import contract
from ..desired.state import EDGE_PROFILE, EDGE_TLS_DIR, INTER_ROUTER_PROFILE, MeshState
from ..model.entities import Entity
from ..model.mesh import MeshSpec
from .checked import ACCEPTED

_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9]*")


class RenderError(ValueError):
    """The rendered config would not load in the router (a bug, or a value the model let by)."""


class _Literal(str):
    """Text the template may write as it is (checked identifiers, comments)."""


def conf_value(value: Any) -> str:
    if isinstance(value, _Literal):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    raise RenderError(f"cannot write a {type(value).__name__} in a config file: {value!r}")


def _key(name: str) -> _Literal:
    if not _IDENTIFIER.fullmatch(name):
        raise RenderError(f"not a config attribute or section name: {name!r}")
    return _Literal(name)


def _comment(text: str) -> _Literal:
    return _Literal(" ".join(str(text).split()))


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("qdmesh_operator.render", "templates"),
    finalize=conf_value, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    keep_trailing_newline=True, autoescape=False)
_ENV.filters["key"] = _key
_ENV.filters["comment"] = _comment


# Seconds between each interior router's round-trip probes to its neighbours (router
# canaryIntervalSeconds): the console shows every link's latency from them. One management
# request per neighbour per interval.
CANARY_INTERVAL_S = 10


def static_sections(mesh: MeshSpec) -> List[Entity]:
    """Sections only a restart changes: the listeners every router needs, TLS, policy."""
    tls = mesh.inter_router_tls.enabled
    inter_router: Dict[str, Any] = {"name": "inter-router", "host": "",
                                    "port": str(contract.INTER_ROUTER_PORT), "role": "inter-router",
                                    "saslMechanisms": "EXTERNAL" if tls else "ANONYMOUS"}
    if tls:
        inter_router.update(sslProfile=INTER_ROUTER_PROFILE, authenticatePeer=True, requireSsl=True)
    sections = [
        Entity("listener", "amqp", {"name": "amqp", "host": "", "port": str(contract.AMQP_PORT),
                                    "role": "normal", "saslMechanisms": "ANONYMOUS"}),
        Entity("listener", "inter-router", inter_router),
        *_management(INTER_ROUTER_PROFILE if tls else None),
        Entity("listener", "http", {"name": "http", "host": "", "port": str(contract.HTTP_PORT),
                                    "http": True, "healthz": True, "metrics": True, "websockets": False}),
    ]
    if tls:
        base = "/etc/qdmesh/inter-router"
        sections.insert(0, Entity("sslProfile", INTER_ROUTER_PROFILE, {
            "name": INTER_ROUTER_PROFILE, "caCertFile": f"{base}/ca.crt", "certFile": f"{base}/tls.crt",
            "privateKeyFile": f"{base}/tls.key"}))
    sections.extend(_policy(mesh))
    return sections


def edge_static_sections(mesh: MeshSpec) -> List[Entity]:
    """An edge router's sections that only a restart changes: clients' amqp, the operator's
    management (as on interior routers: its certificate, or nothing with TLS disabled), health
    and metrics, and the edge certificate its connectors to the interior present."""
    tls = mesh.inter_router_tls.enabled
    sections = [
        Entity("listener", "amqp", {"name": "amqp", "host": "", "port": str(contract.AMQP_PORT),
                                    "role": "normal", "saslMechanisms": "ANONYMOUS"}),
        *_management(EDGE_PROFILE if tls else None),
        Entity("listener", "http", {"name": "http", "host": "", "port": str(contract.HTTP_PORT),
                                    "http": True, "healthz": True, "metrics": True, "websockets": False}),
    ]
    if tls:
        sections.insert(0, Entity("sslProfile", EDGE_PROFILE, {
            "name": EDGE_PROFILE, "caCertFile": f"{EDGE_TLS_DIR}/ca.crt",
            "certFile": f"{EDGE_TLS_DIR}/tls.crt", "privateKeyFile": f"{EDGE_TLS_DIR}/tls.key"}))
    sections.extend(_policy(mesh))
    return sections


def _management(tls_profile: str | None) -> List[Entity]:
    """The operator's own way in: the management listener, and the vhost its connections are
    policed by. The operator manages the routers through it, never the client listener, whose
    vhost policies may refuse $management to everyone. Route-container connections are policed
    as user connections (as qdrouterd polices them), so the listener names its own vhost
    (``policyVhost``, whatever hostname the operator opens with), which allows everything;
    with TLS only holders of the mesh's certificate get in at all."""
    listener: Dict[str, Any] = {"name": "management", "host": "", "port": str(contract.MANAGEMENT_PORT),
                                "role": "route-container", "policyVhost": contract.MANAGEMENT_VHOST,
                                "saslMechanisms": "EXTERNAL" if tls_profile else "ANONYMOUS"}
    if tls_profile:
        listener.update(sslProfile=tls_profile, authenticatePeer=True, requireSsl=True)
    everything = {"remoteHosts": "*", "sources": "*", "targets": "*", "allowDynamicSource": True,
                  "allowAnonymousSender": True}
    vhost = {"name": contract.MANAGEMENT_VHOST, "hostname": contract.MANAGEMENT_VHOST,
             "allowUnknownUser": True, "groups": {"$default": everything}}
    return [Entity("listener", "management", listener), Entity("vhost", contract.MANAGEMENT_VHOST, vhost)]


def _policy(mesh: MeshSpec) -> List[Entity]:
    sections: List[Entity] = []
    if mesh.policy is not None:
        p = mesh.policy
        attrs: Dict[str, Any] = {"enableVhostPolicy": p.enable_vhost_policy,
                                 "enableVhostNamePatterns": p.enable_vhost_name_patterns}
        for key, value in (("maxConnections", p.max_connections), ("maxMessageSize", p.max_message_size),
                           ("defaultVhost", p.default_vhost)):
            if value is not None:
                attrs[key] = value
        sections.append(Entity("policy", "policy", attrs))
    return sections


def _parse_once(text: str, name: str) -> None:
    """Raises ConfigError if the router would not load ``text``; a text accepted before is
    not parsed again."""
    if ACCEPTED.known(text, name):
        return
    parse_config_text(text, name)
    ACCEPTED.add(text, name)


def render_router_conf(state: MeshState, router_id: str) -> str:
    """The config file of one router; raises RenderError if the router's parser refuses it."""
    text = _ENV.get_template("qdrouterd.conf.j2").render(
        mesh=state.mesh, router_id=router_id, edge_group=None, static_sections=static_sections(state.mesh),
        entities=state.entities[router_id], canary_interval=CANARY_INTERVAL_S)
    try:
        _parse_once(text, f"{router_id}.conf")
    except ConfigError as e:
        raise RenderError(f"rendered config of {router_id} does not load: {e}") from None
    return text


def render_edge_conf(state: MeshState, group: str) -> str:
    """The config file of every edge router of ``group``; raises RenderError as above."""
    text = _ENV.get_template("qdrouterd.conf.j2").render(
        mesh=state.mesh, edge_group=group, static_sections=edge_static_sections(state.mesh),
        entities=state.edges[group])
    try:
        _parse_once(text, contract.edge_config_key(group))
    except ConfigError as e:
        raise RenderError(f"rendered config of edge group {group} does not load: {e}") from None
    return text


def render_all(state: MeshState) -> Dict[str, str]:
    """ConfigMap data: ``<router id>.conf`` for every interior router, ``edge-<group>.conf``
    for every edge group."""
    confs = {f"{rid}.conf": render_router_conf(state, rid) for rid in state.mesh.router_ids()}
    confs.update((contract.edge_config_key(g.name), render_edge_conf(state, g.name))
                 for g in state.mesh.edge_groups)
    return confs
