"""Router-control message bodies of the Qpid Dispatch routing protocol.

Each class maps one-to-one onto the AMQP map carried in the body of a control message; the
opcode travels in the application properties as ``{'opcode': <OPCODE>}``.  Field names and
optionality follow upstream qpid-dispatch (python/qpid_dispatch_internal/router/data.py for
HELLO/RA/LSU/LSR, src/router_core/modules/mobile_sync/mobile.c for MAU/MAR), protocol
version 1.

Bodies come from other routers, so ``from_dict`` trusts nothing: every field is type-checked
and a :class:`ProtocolError` names the offending field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, List, Mapping, Union

#: Version we speak.  Bodies without 'pv' are version 0; bodies with a higher version are
#: ignored by upstream (their layout may differ), so we refuse them with IncompatibleVersion.
PROTOCOL_VERSION = 1

DEFAULT_AREA = "0"

#: RA key naming the sender's multicast-tree scheme (qdrouterd reads only the keys it knows).
MULTICAST_SCHEME_KEY = "qdmesh_multicast"


class ProtocolError(ValueError):
    """A control-message body is malformed."""


class IncompatibleVersion(ProtocolError):
    """The body announces a protocol version newer than ours."""

    def __init__(self, opcode: str, router_id: str, version: int) -> None:
        super().__init__(f"{opcode} from {router_id!r} has protocol version {version} > {PROTOCOL_VERSION}")
        self.router_id = router_id
        self.version = version


# -- field readers -----------------------------------------------------------------------

_MISSING = object()


def _get(body: Mapping[str, Any], key: str, what: str, required: bool) -> Any:
    value = body.get(key, _MISSING)
    if value is _MISSING:
        if required:
            raise ProtocolError(f"{what}: mandatory field '{key}' missing")
        return None
    return value


def _str(body: Mapping[str, Any], key: str, what: str, default: str | None = None) -> str:
    value = _get(body, key, what, default is None)
    if value is None:
        assert default is not None
        return default
    if not isinstance(value, str):
        raise ProtocolError(f"{what}: field '{key}' must be a string, got {type(value).__name__}")
    return value


def _int(body: Mapping[str, Any], key: str, what: str, default: int | None = None) -> int:
    value = _get(body, key, what, default is None)
    if value is None:
        assert default is not None
        return default
    # bool is an int subclass in Python but never a valid sequence number or cost on the wire.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"{what}: field '{key}' must be an integer, got {type(value).__name__}")
    if value < 0:
        raise ProtocolError(f"{what}: field '{key}' must not be negative, got {value}")
    return value


def _str_list(body: Mapping[str, Any], key: str, what: str, required: bool) -> List[str] | None:
    value = _get(body, key, what, required)
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise ProtocolError(f"{what}: field '{key}' must be a list, got {type(value).__name__}")
    for item in value:
        if not isinstance(item, str):
            raise ProtocolError(f"{what}: field '{key}' must hold strings, found {type(item).__name__}")
    return list(value)


def _check_map(body: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise ProtocolError(f"{what}: body must be a map, got {type(body).__name__}")
    return body


# -- messages ----------------------------------------------------------------------------


@dataclass
class LinkState:
    """One router's adjacency list: {peer_id: cost}, versioned by ls_seq."""

    id: str
    ls_seq: int
    peers: Dict[str, int] = field(default_factory=dict)
    area: str = DEFAULT_AREA

    def to_dict(self) -> Dict[str, Any]:
        return {"id": self.id, "area": self.area, "ls_seq": self.ls_seq, "peers": dict(self.peers)}

    @classmethod
    def from_dict(cls, body: Any) -> LinkState:
        what = "LinkState"
        body = _check_map(body, what)
        peers = _get(body, "peers", what, True)
        if not isinstance(peers, Mapping):
            raise ProtocolError(f"{what}: field 'peers' must be a map, got {type(peers).__name__}")
        checked: Dict[str, int] = {}
        for peer, _cost in peers.items():
            if not isinstance(peer, str):
                found = type(peer).__name__
                raise ProtocolError(f"{what}: field 'peers' keys must be strings, found {found}")
            checked[peer] = _int(peers, peer, f"{what} peers")
        return cls(
            id=_str(body, "id", what),
            ls_seq=_int(body, "ls_seq", what),
            peers=checked,
            area=_str(body, "area", what, DEFAULT_AREA),
        )


@dataclass
class Hello:
    """HELLO: neighbour discovery, one hop only; 'seen' lists the routers we hear."""

    OPCODE: ClassVar[str] = "HELLO"
    id: str
    seen: List[str] = field(default_factory=list)
    instance: int = 0
    area: str = DEFAULT_AREA
    pv: int = PROTOCOL_VERSION

    def to_dict(self) -> Dict[str, Any]:
        return {"id": self.id, "pv": self.pv, "area": self.area, "instance": self.instance,
                "seen": list(self.seen)}

    @classmethod
    def from_dict(cls, body: Any) -> Hello:
        what = cls.OPCODE
        body = _check_map(body, what)
        seen = _str_list(body, "seen", what, True)
        assert seen is not None
        return cls(id=_str(body, "id", what), seen=seen, instance=_int(body, "instance", what, 0),
                   area=_str(body, "area", what, DEFAULT_AREA), pv=_int(body, "pv", what, 0))


@dataclass
class RouterAdvertisement:
    """RA: periodic announcement of a router's link-state and mobile-address sequences."""

    OPCODE: ClassVar[str] = "RA"
    id: str
    ls_seq: int
    mobile_seq: int
    instance: int = 0
    area: str = DEFAULT_AREA
    pv: int = PROTOCOL_VERSION
    # The multicast-tree scheme the sender forwards by when every router shares it
    # (protocol/multicast_trees.py); 0 = none (qdrouterd, which ignores the key).
    multicast_scheme: int = 0

    def to_dict(self) -> Dict[str, Any]:
        body: Dict[str, Any] = {"id": self.id, "pv": self.pv, "area": self.area, "instance": self.instance,
                                "ls_seq": self.ls_seq, "mobile_seq": self.mobile_seq}
        if self.multicast_scheme:
            body[MULTICAST_SCHEME_KEY] = self.multicast_scheme
        return body

    @classmethod
    def from_dict(cls, body: Any) -> RouterAdvertisement:
        what = cls.OPCODE
        body = _check_map(body, what)
        return cls(id=_str(body, "id", what), ls_seq=_int(body, "ls_seq", what),
                   mobile_seq=_int(body, "mobile_seq", what), instance=_int(body, "instance", what, 0),
                   area=_str(body, "area", what, DEFAULT_AREA), pv=_int(body, "pv", what, 0),
                   multicast_scheme=_int(body, MULTICAST_SCHEME_KEY, what, 0))


@dataclass
class LinkStateUpdate:
    """LSU: a router's full link state, sent in answer to an LSR."""

    OPCODE: ClassVar[str] = "LSU"
    id: str
    ls_seq: int
    ls: LinkState
    instance: int = 0
    area: str = DEFAULT_AREA
    pv: int = PROTOCOL_VERSION
    multicast_scheme: int = 0  # as RouterAdvertisement's

    def to_dict(self) -> Dict[str, Any]:
        body: Dict[str, Any] = {"id": self.id, "pv": self.pv, "area": self.area, "instance": self.instance,
                                "ls_seq": self.ls_seq, "ls": self.ls.to_dict()}
        if self.multicast_scheme:
            body[MULTICAST_SCHEME_KEY] = self.multicast_scheme
        return body

    @classmethod
    def from_dict(cls, body: Any) -> LinkStateUpdate:
        what = cls.OPCODE
        body = _check_map(body, what)
        ls_body = _get(body, "ls", what, True)
        if not isinstance(ls_body, Mapping):
            raise ProtocolError(f"{what}: field 'ls' must be a map, got {type(ls_body).__name__}")
        return cls(id=_str(body, "id", what), ls_seq=_int(body, "ls_seq", what),
                   ls=LinkState.from_dict(ls_body), instance=_int(body, "instance", what, 0),
                   area=_str(body, "area", what, DEFAULT_AREA), pv=_int(body, "pv", what, 0),
                   multicast_scheme=_int(body, MULTICAST_SCHEME_KEY, what, 0))


@dataclass
class LinkStateRequest:
    """LSR: ask a router for its link state (upstream carries no 'instance' here)."""

    OPCODE: ClassVar[str] = "LSR"
    id: str
    area: str = DEFAULT_AREA
    pv: int = PROTOCOL_VERSION

    def to_dict(self) -> Dict[str, Any]:
        return {"id": self.id, "pv": self.pv, "area": self.area}

    @classmethod
    def from_dict(cls, body: Any) -> LinkStateRequest:
        what = cls.OPCODE
        body = _check_map(body, what)
        return cls(id=_str(body, "id", what), area=_str(body, "area", what, DEFAULT_AREA),
                   pv=_int(body, "pv", what, 0))


@dataclass
class MobileAddressUpdate:
    """MAU: differential (add + del) or absolute (exist) list of a router's mobile addresses.

    Addresses are upstream's address hash keys ("M0queue" = mobile, phase 0).  'hints' is a
    list of treatment codes parallel to 'add' (or 'exist'); a receiver ignores it when the
    lengths differ, as mobile.c does.
    """

    OPCODE: ClassVar[str] = "MAU"
    id: str
    mobile_seq: int
    add: List[str] | None = None
    delete: List[str] | None = None  # 'del' on the wire; a Python keyword
    exist: List[str] | None = None
    hints: List[int] | None = None
    area: str = DEFAULT_AREA
    pv: int = PROTOCOL_VERSION

    @property
    def is_absolute(self) -> bool:
        return self.exist is not None

    def to_dict(self) -> Dict[str, Any]:
        body: Dict[str, Any] = {"id": self.id, "pv": self.pv, "area": self.area,
                                "mobile_seq": self.mobile_seq}
        if self.hints is not None:
            body["hints"] = list(self.hints)
        if self.add is not None:
            body["add"] = list(self.add)
        if self.delete is not None:
            body["del"] = list(self.delete)
        if self.exist is not None:
            body["exist"] = list(self.exist)
        return body

    @classmethod
    def from_dict(cls, body: Any) -> MobileAddressUpdate:
        what = cls.OPCODE
        body = _check_map(body, what)
        add = _str_list(body, "add", what, False)
        delete = _str_list(body, "del", what, False)
        exist = _str_list(body, "exist", what, False)
        # Same shape rule as mobile.c: absolute (exist only) or differential (add and del).
        if exist is not None and (add is not None or delete is not None):
            raise ProtocolError(f"{what}: field 'exist' must not be combined with 'add'/'del'")
        if exist is None and (add is None or delete is None):
            missing = "add" if add is None else "del"
            raise ProtocolError(f"{what}: field '{missing}' missing (needed when 'exist' is absent)")
        raw_hints = _get(body, "hints", what, False)
        hints: List[int] | None = None
        if raw_hints is not None:
            if not isinstance(raw_hints, (list, tuple)):
                raise ProtocolError(f"{what}: field 'hints' must be a list, got {type(raw_hints).__name__}")
            hints = []
            for h in raw_hints:
                if isinstance(h, bool) or not isinstance(h, int):
                    raise ProtocolError(f"{what}: field 'hints' must hold integers, found {type(h).__name__}")
                hints.append(h)
        return cls(id=_str(body, "id", what), mobile_seq=_int(body, "mobile_seq", what), add=add,
                   delete=delete, exist=exist, hints=hints, area=_str(body, "area", what, DEFAULT_AREA),
                   pv=_int(body, "pv", what, 0))


@dataclass
class MobileAddressRequest:
    """MAR: 'I have your mobile_seq = have_seq; send me an absolute MAU if you are ahead'."""

    OPCODE: ClassVar[str] = "MAR"
    id: str
    have_seq: int
    area: str = DEFAULT_AREA
    pv: int = PROTOCOL_VERSION

    def to_dict(self) -> Dict[str, Any]:
        return {"id": self.id, "pv": self.pv, "area": self.area, "have_seq": self.have_seq}

    @classmethod
    def from_dict(cls, body: Any) -> MobileAddressRequest:
        what = cls.OPCODE
        body = _check_map(body, what)
        return cls(id=_str(body, "id", what), have_seq=_int(body, "have_seq", what),
                   area=_str(body, "area", what, DEFAULT_AREA), pv=_int(body, "pv", what, 0))


ControlMessage = Union[Hello, RouterAdvertisement, LinkStateUpdate, LinkStateRequest,
                       MobileAddressUpdate, MobileAddressRequest]

MESSAGE_TYPES: Dict[str, Any] = {
    cls.OPCODE: cls
    for cls in (Hello, RouterAdvertisement, LinkStateUpdate, LinkStateRequest, MobileAddressUpdate,
                MobileAddressRequest)
}


def decode(opcode: Any, body: Any) -> ControlMessage:
    """Parse a control-message body given the 'opcode' application property.

    The version is checked before the rest of the body, because a newer version may lay the
    body out differently (upstream's isCompatibleVersion does the same).
    """
    if not isinstance(opcode, str) or opcode not in MESSAGE_TYPES:
        raise ProtocolError(f"unknown opcode {opcode!r}")
    body = _check_map(body, opcode)
    pv = body.get("pv", 0)
    if isinstance(pv, int) and not isinstance(pv, bool) and pv > PROTOCOL_VERSION:
        rid = body.get("id")
        raise IncompatibleVersion(opcode, rid if isinstance(rid, str) else "<unknown>", pv)
    result: ControlMessage = MESSAGE_TYPES[opcode].from_dict(body)
    return result
