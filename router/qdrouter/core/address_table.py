"""Addresses known to the router: who consumes them, who produces to them, how to distribute."""

from __future__ import annotations

from collections import deque
from typing import Callable, Deque, Dict, Iterable, Iterator, List, NamedTuple, Set, Tuple

from .address_patterns import PatternTree, normalized
from .links import CoreLink, InFlight

CLOSEST = "closest"
BALANCED = "balanced"
MULTICAST = "multicast"
# Configured to refuse traffic: senders get no credit and messages are released.
UNAVAILABLE = "unavailable"
DISTRIBUTIONS = (CLOSEST, BALANCED, MULTICAST, UNAVAILABLE)
DEFAULT_DISTRIBUTION = BALANCED
_CANONICAL = {distribution: distribution for distribution in DISTRIBUTIONS}

_SEPARATORS = "./"


# An in-process node's message handler: the outcome for the sender.
NodeHandler = Callable[[InFlight], int]


class AddressConfig(NamedTuple):
    """What an address entity sets for the addresses it matches."""

    distribution: str
    #: (ingress, egress) phases of a waypoint or phased entity; None: both 0.
    phases: Tuple[int, int] | None


def _config_key(prefix: str | None, pattern: str | None) -> Tuple[str, str, List[str]]:
    if pattern is not None:
        return "pattern", pattern, normalized(pattern, is_prefix=False)
    return "prefix", prefix or "", normalized(prefix or "", is_prefix=True)


class AddressCounters:
    __slots__ = (
        "deliveries_egress",
        "deliveries_from_container",
        "deliveries_ingress",
        "deliveries_to_container",
        "deliveries_transit",
        "dropped_presettled",
        "released_no_route",
        "route_container_egress",
        "route_container_ingress",
    )

    def __init__(self) -> None:
        self.deliveries_ingress = 0
        self.deliveries_egress = 0
        self.deliveries_transit = 0
        self.deliveries_to_container = 0
        self.deliveries_from_container = 0
        self.dropped_presettled = 0
        self.released_no_route = 0
        # Deliveries that route-container connections' links bound to this address received
        # (ingress) and sent (egress) before they went; router.address's
        # deliveriesIngress/EgressRouteContainer add the live links' counters at query time.
        self.route_container_ingress = 0
        self.route_container_egress = 0

    def add(self, other: AddressCounters) -> None:
        for name in AddressCounters.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class Address:
    __slots__ = (
        "consumers",
        "counters",
        "distribution",
        "handler",
        "key",
        "next_index",
        "producers",
        "remote",
        "undelivered",
    )

    def __init__(self, key: str, distribution: str) -> None:
        self.key = key
        # The constant itself: the forwarder and the adaptor compare distributions by identity.
        self.distribution = _CANONICAL.get(distribution, distribution)
        self.consumers: List[CoreLink] = []
        self.producers: List[CoreLink] = []
        # Anycast messages waiting for a consumer with credit.
        self.undelivered: Deque[InFlight] = deque()
        # Where the next closest/balanced search starts, so equal consumers take turns.
        self.next_index = 0
        self.counters = AddressCounters()
        # An in-process consumer (the management agent, AddressTable.subscribe): called
        # with each message instead of forwarding it; returns the outcome for the sender.
        self.handler: NodeHandler | None = None
        # Other routers of the mesh with consumers for this address (from MAU).
        self.remote: List[str] = []

    def is_unused(self) -> bool:
        return (not self.consumers and not self.producers and not self.undelivered
                and self.handler is None and not self.remote)

    def routable(self) -> bool:
        if self.distribution is UNAVAILABLE:
            return False
        return bool(self.consumers) or self.handler is not None or bool(self.remote)


def phased(address: str, phase: int) -> str:
    """The table key of an address phase. Phase 0 is the address itself; other phases (a
    waypoint's way back from the broker) get a prefix no AMQP address starts with."""
    return address if not phase else f"\x00{phase}\x00{address}"


def split_phase(key: str) -> Tuple[str, int]:
    if key.startswith("\x00"):
        phase, _, address = key[1:].partition("\x00")
        return address, int(phase)
    return key, 0


def address_key(address: str, router_id: str = "") -> str:
    """qdrouterd's address keys: a class character (L local, T topological, M mobile with
    its phase), then the address; qdstat shows the class from it. This router's own
    topological addresses (dynamic reply-to) are local, as qdrouterd shows them."""
    if address.startswith("_local/"):
        return "L" + address[7:]
    own = f"_topo/0/{router_id}/"
    if router_id and address.startswith(own):
        return "L" + address[len(own):]
    if address.startswith("_topo/"):
        return "T" + address[6:]
    if address.startswith("_edge/") and "/" not in address[6:]:
        return "H" + address[6:]  # an edge router attached to an interior (edge summary)
    plain, phase = split_phase(address)
    return f"M{phase}{plain}"


def is_temporary(key: str) -> bool:
    """A dynamic source's address, as the router makes them: `_topo/0/<router>/temp.<id>`."""
    return (key.startswith("_topo/") or key.startswith("_edge/")) and "/temp." in key


def prefix_matches(prefix: str, address: str) -> bool:
    """Prefix match on token boundaries, as later qdrouterd releases do: 'a.b' matches
    'a.b', 'a.b.c' and 'a.b/c' but not 'a.bc'."""
    if not address.startswith(prefix):
        return False
    if len(address) == len(prefix) or prefix == "" or prefix[-1] in _SEPARATORS:
        return True
    return address[len(prefix)] in _SEPARATORS


class AddressTable:
    def __init__(self, prefixes: Iterable[Tuple[str, str]] = ()) -> None:
        # The address entities: prefixes and patterns in one tree, matched as qdrouterd does.
        self._configs: PatternTree[AddressConfig] = PatternTree()
        # How many entities set phases: without any, ingress and egress keys are the address.
        self._phased = 0
        self._addresses: Dict[str, Address] = {}
        # The distribution of addresses no entity matches (the router's defaultDistribution).
        self.default_distribution: str = DEFAULT_DISTRIBUTION
        # What addresses counted before they were dropped from the table, so the router's
        # totals (qdstat -g, /metrics counters) never go down.
        self.retired = AddressCounters()
        for prefix, distribution in prefixes:
            self.add_prefix(prefix, distribution)

    def add_config(self, distribution: str, *, prefix: str | None = None, pattern: str | None = None,
                   phases: Tuple[int, int] | None = None) -> None:
        """An address entity: addresses matching ``prefix`` (on token boundaries) or
        ``pattern`` get ``distribution``; with ``phases``, producers use phase ingress and
        consumers phase egress (a waypoint: 0 toward the broker, 1 back from it).
        ValueError names the attribute at fault."""
        if distribution not in DISTRIBUTIONS:
            raise ValueError(f"attribute 'distribution': {distribution!r} is not one of "
                             f"{', '.join(DISTRIBUTIONS)}")
        attribute, value, key = _config_key(prefix, pattern)
        try:
            # The constant itself, so hot-path comparisons can be identity checks.
            self._configs.add(key, AddressConfig(_CANONICAL[distribution], phases))
        except ValueError as error:
            # As qdrouterd: a second entity would be shadowed and shown but never applied.
            raise ValueError(f"attribute '{attribute}': {value!r} {error}") from None
        self._phased += phases is not None
        self._redistribute()

    def remove_config(self, *, prefix: str | None = None, pattern: str | None = None) -> None:
        key = _config_key(prefix, pattern)[2]
        config = self._configs.match_key(key)
        if config is None:
            return
        self._configs.remove(key)
        self._phased -= config.phases is not None
        self._redistribute()

    def add_prefix(self, prefix: str, distribution: str) -> None:
        self.add_config(distribution, prefix=prefix)

    def phases_of(self, address: str) -> Tuple[int, int]:
        """(ingress phase, egress phase) configured for ``address`` ((0, 0) if none)."""
        return self._phases_of(address)

    def _phases_of(self, address: str) -> Tuple[int, int]:
        config = self._configs.match(address)
        if config is None or config.phases is None:
            return (0, 0)
        return config.phases

    def ingress_key(self, address: str) -> str:
        """Where producers' messages for ``address`` go in."""
        if not self._phased:
            return address
        return phased(address, self._phases_of(address)[0])

    def egress_key(self, address: str) -> str:
        """Where consumers of ``address`` take messages from."""
        if not self._phased:
            return address
        return phased(address, self._phases_of(address)[1])

    def _redistribute(self) -> None:
        """Configured prefixes changed at run time: existing addresses follow at once."""
        for address in self._addresses.values():
            if address.handler is None:  # in-process nodes keep their own
                address.distribution = self.distribution_for(address.key)

    def distribution_for(self, key: str, default: str | None = None) -> str:
        """The configured distribution of ``key`` (its address entity, prefix or pattern), else
        ``default`` (None: the router's default distribution)."""
        key = split_phase(key)[0]
        if is_temporary(key):
            # As qdrouterd (address_lookup_client.c makes it QD_TREATMENT_ANYCAST_BALANCED): a
            # dynamic (reply-to) address has one consumer and is anycast balanced whatever the
            # configured prefixes say.
            return BALANCED
        config = self._configs.match(key)
        if config is not None:
            return config.distribution
        if default is not None:
            return default
        # The router's own addresses (_topo/..., _edge/..., $management) are not its users':
        # the default distribution is for the users' (mobile) addresses, as in qdrouterd.
        return DEFAULT_DISTRIBUTION if key[:1] in ("_", "$") else self.default_distribution

    def set_default_distribution(self, name: str) -> None:
        """The router's defaultDistribution (one of DISTRIBUTIONS)."""
        if name not in _CANONICAL:
            raise ValueError(f"defaultDistribution: {name!r} is not one of {', '.join(DISTRIBUTIONS)}")
        self.default_distribution = _CANONICAL[name]

    def get(self, key: str, default: str | None = None) -> Address:
        """The entry for ``key``, made if new with its configured distribution, else
        ``default`` (an address first learned from another router: that router's hint)."""
        address = self._addresses.get(key)
        if address is None:
            address = Address(key, self.distribution_for(key, default))
            self._addresses[key] = address
        return address

    def find(self, key: str) -> Address | None:
        return self._addresses.get(key)

    def subscribe(self, key: str, handler: NodeHandler) -> Address:
        """An in-process node takes ``key``'s messages (qdrouterd's qdr_core_subscribe): the
        management agent, an edge's lookup server and client, its tracking reader. One node
        an address: a second is refused."""
        address = self.get(key)
        if address.handler is not None:
            raise ValueError(f"address {key!r} already has an in-process node")
        address.handler = handler
        return address

    @staticmethod
    def stand_in(address: Address, handler: NodeHandler | None) -> NodeHandler | None:
        """``handler`` takes ``address``'s messages in its node's place (management's test
        hooks: a failure armed for one message), or the node again; returns the one it replaced."""
        previous, address.handler = address.handler, handler
        return previous

    def discard_if_unused(self, address: Address) -> None:
        if address.is_unused() and self._addresses.get(address.key) is address:
            del self._addresses[address.key]
            self.retired.add(address.counters)

    def __iter__(self) -> Iterator[Address]:
        return iter(list(self._addresses.values()))

    def __len__(self) -> int:
        return len(self._addresses)


def consumers_leaving(links: List[CoreLink]) -> Set[CoreLink]:
    """Many consumers are going at once (their connection dropped): off their
    addresses' lists in one pass per address, but for each address's last one, which
    Forwarder.consumer_detached removes (so the address's last consumer leaving is seen once).
    Removed one by one, 50,000 consumers of one address took seconds per thousand.
    Returns those taken off: detach each with ``listed=False``."""
    leaving: Dict[int, List[CoreLink]] = {}
    for link in links:
        if not link.incoming and link.address is not None:
            leaving.setdefault(id(link.address), []).append(link)
    taken: Set[CoreLink] = set()
    for group in leaving.values():
        address = group[0].address
        if len(group) < 2 or address is None:
            continue
        consumers = address.consumers
        gone = set(group[:-1])  # links hash and compare by identity
        consumers[:] = [link for link in consumers if link not in gone]
        taken |= gone
    return taken
