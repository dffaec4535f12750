"""The link-state database (upstream link.py LinkStateEngine + the bookkeeping of node.py).

Holds my own link state (neighbour -> cost, ls_seq bumped on every change) and every remote
router's last link state with its ls_seq, instance and last-heard time.  It decides, like
upstream:
* an RA is due every raInterval, or raIntervalFlux while the topology is in flux (a change
  within the last 2 * raIntervalFlux), and immediately after my own link state changed;
* an LSR is due to a router whose RA announces a newer ls_seq than we hold, to a new
  neighbour, to a router seen restarting (new instance), and to routers first learned of
  through another router's link state (once they are reachable);
* a remote link state is cleared after remoteLsMaxAge without RA/LSU from its router, and a
  router with no links that nobody lists is forgotten after three such checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Hashable, List, Mapping, Set

from qdrouter.protocol.messages import LinkState, LinkStateUpdate, RouterAdvertisement

# Seconds to wait for an LSU before asking again.
LSR_RETRY_S = 2.0

@dataclass
class RemoteRouter:
    id: str
    instance: int | None
    link_state: LinkState
    last_seen: float = 0.0
    need_ls_request: bool = True
    keep_alive_count: int = 0
    expired: bool = False  # LS cleared by remoteLsMaxAge: its links no longer count at all
    # The connection its last advertisement arrived on: a way back to it even while the link
    # state we hold gives no path (see take_ls_requests).
    heard_via: Hashable | None = None
    # The multicast-tree scheme its advertisements name (0: none, e.g. qdrouterd).
    multicast_scheme: int = 0


@dataclass
class TickResult:
    send_ra: bool = False
    my_ls_changed: bool = False  # my link state has a new ls_seq: flood it (see own_update)
    lsr_to: List[str] = field(default_factory=list)
    forgotten: List[str] = field(default_factory=list)  # routers dropped from the database
    restarted: List[str] = field(default_factory=list)  # routers seen with a new instance


class LinkStateDatabase:
    def __init__(self, my_id: str, area: str, ra_interval: float, ra_interval_flux: float,
                 remote_ls_max_age: float, multicast_scheme: int = 0) -> None:
        self.my_id = my_id
        # The multicast-tree scheme this router's RAs and LSUs name (protocol/multicast_rules.py).
        self.multicast_scheme = multicast_scheme
        self.area = area
        self.ra_interval = ra_interval
        self.ra_interval_flux = ra_interval_flux
        self.remote_ls_max_age = remote_ls_max_age
        self.my_ls = LinkState(my_id, 0, {}, area)
        self.routers: Dict[str, RemoteRouter] = {}
        self.topology_changed = False  # a recompute of the paths is needed
        self._my_ls_changed = False
        self._last_ra: float | None = None
        self._last_change: float | None = None
        self._restarted: List[str] = []
        self._forgotten: List[str] = []
        # Routers asked for their link state (LSR) -> when; cleared by the LSU.
        self._awaiting_lsu: Dict[str, float] = {}
        self._clock = 0.0
        # Leaving the network (a graceful drain): the link state advertised lists no peers,
        # so that every other router computes paths around this one, while this router's
        # own paths (from its real link state) still forward what is in flight.
        self.withdrawn = False

    # -- my own link state ----------------------------------------------------------------

    def set_peer(self, router_id: str, cost: int) -> None:
        if self.my_ls.peers.get(router_id) != cost:
            self.my_ls.peers[router_id] = cost
            self._my_ls_changed = True
            # A new neighbour: ask for its link state right away (upstream neighbor_refresh).
            self._router(router_id, None).need_ls_request = True

    def withdraw(self) -> None:
        """Advertise an empty link state from the next tick on (with a new ls_seq)."""
        self.withdrawn = True
        self._my_ls_changed = True

    def remove_peer(self, router_id: str) -> None:
        if self.my_ls.peers.pop(router_id, None) is not None:
            self._my_ls_changed = True

    # -- inbound ------------------------------------------------------------------------

    def _router(self, router_id: str, instance: int | None) -> RemoteRouter:
        node = self.routers.get(router_id)
        if node is None:
            node = self.routers[router_id] = RemoteRouter(router_id, instance, LinkState(router_id, 0, {}))
            self.topology_changed = True
        elif instance is not None and node.instance != instance:
            if node.instance is not None:
                # The router restarted: its old link state and addresses are void.
                node.link_state = LinkState(router_id, 0, {})
                node.need_ls_request = True
                self.topology_changed = True
                self._restarted.append(router_id)
            node.instance = instance
        return node

    def on_ra(self, msg: RouterAdvertisement, now: float, via: Hashable | None = None) -> bool:
        """Record an RA (``via``: the connection it arrived on); True if we must request the
        sender's link state."""
        if msg.id == self.my_id:
            return False
        node = self._router(msg.id, msg.instance)
        node.last_seen = now
        if via is not None:
            node.heard_via = via
        self._note_scheme(node, msg.multicast_scheme)
        if node.link_state.ls_seq < msg.ls_seq:
            node.need_ls_request = True
        return node.need_ls_request

    def on_lsu(self, msg: LinkStateUpdate, now: float) -> bool:
        """Adopt a newer link state; True if the topology changed."""
        if msg.id == self.my_id or msg.ls.id != msg.id:
            return False
        node = self._router(msg.id, msg.instance)
        self._note_scheme(node, msg.multicast_scheme)
        self._awaiting_lsu.pop(msg.id, None)  # any answer ends the request
        if msg.ls.ls_seq <= node.link_state.ls_seq:
            return False
        node.link_state = msg.ls
        node.expired = False
        node.last_seen = now
        node.need_ls_request = False
        self.topology_changed = True
        for peer in msg.ls.peers:
            if peer != self.my_id:
                self._router(peer, None)  # learned of it: request its LS once reachable
        return True

    def _note_scheme(self, node: RemoteRouter, scheme: int) -> None:
        if node.multicast_scheme != scheme:
            node.multicast_scheme = scheme
            self.topology_changed = True  # which multicast rule applies may have changed

    def answer_lsr(self, requester: str, instance: int) -> LinkStateUpdate:
        if requester != self.my_id:
            self._router(requester, None)
        return self.own_update(instance)

    def own_update(self, instance: int) -> LinkStateUpdate:
        """My current link state as an LSU (an answer to an LSR, or flooded on change)."""
        peers = {} if self.withdrawn else dict(self.my_ls.peers)
        ls = LinkState(self.my_id, self.my_ls.ls_seq, peers, self.area)
        return LinkStateUpdate(self.my_id, ls.ls_seq, ls, instance, self.area,
                               multicast_scheme=self.multicast_scheme)

    # -- time ----------------------------------------------------------------------------

    def in_flux(self, now: float) -> bool:
        return self._last_change is not None and now - self._last_change <= 2 * self.ra_interval_flux

    def tick(self, now: float, reachable: Set[str]) -> TickResult:
        result = TickResult()
        self._expire(now)
        if self._my_ls_changed:
            self._my_ls_changed = False
            self.my_ls.ls_seq += 1
            self.topology_changed = True
            result.send_ra = True
            result.my_ls_changed = True
        if self.topology_changed:
            self._last_change = now
        interval = self.ra_interval_flux if self.in_flux(now) else self.ra_interval
        if self._last_ra is None or now - self._last_ra >= interval:
            result.send_ra = True
        if result.send_ra:
            self._last_ra = now
        self._clock = now
        self._retry_ls_requests(now)
        result.lsr_to = self.take_ls_requests(reachable)
        result.restarted, self._restarted = self._restarted, []
        result.forgotten = self._forgotten
        self._forgotten = []
        return result

    def take_ls_requests(self, reachable: Set[str]) -> List[str]:
        """Routers owed an LSR that we can route to; clears their flag. Each request is
        remembered until its LSU arrives, and asked again after LSR_RETRY_S: a request or
        answer lost while links were still attaching must not leave the database stale
        until the next periodic advertisement."""
        # A router with no known path is still asked if it is a neighbour, or if its
        # advertisement reached us (back the way it came): the link state we hold for it, or
        # for routers near it, may be stale and hide the path its new link state would show
        # (a deadlock that only remoteLsMaxAge broke, after a restart next to a failure).
        due = [rid for rid, node in sorted(self.routers.items())
               if node.need_ls_request
               and (rid in reachable or rid in self.my_ls.peers or node.heard_via is not None)]
        for rid in due:
            self.routers[rid].need_ls_request = False
            self._awaiting_lsu[rid] = self._clock
        return due

    def _retry_ls_requests(self, now: float) -> None:
        for rid, asked in list(self._awaiting_lsu.items()):
            node = self.routers.get(rid)
            if node is None:
                del self._awaiting_lsu[rid]
            elif now - asked >= LSR_RETRY_S:
                node.need_ls_request = True
                del self._awaiting_lsu[rid]

    def take_restarted(self) -> List[str]:
        out, self._restarted = self._restarted, []
        return out

    def _expire(self, now: float) -> None:
        forgotten: List[str] = []
        for rid, node in list(self.routers.items()):
            if node.link_state.peers and now - node.last_seen > self.remote_ls_max_age:
                node.link_state = LinkState(rid, 0, {})
                node.expired = True
                self.topology_changed = True
            if node.link_state.peers or rid in self.my_ls.peers:
                node.keep_alive_count = 0
                continue
            if any(rid in other.link_state.peers for oid, other in self.routers.items() if oid != rid):
                continue
            # Learned-of routers get three checks before removal, so that a router we heard of
            # before its link state arrived is not dropped at once (upstream keep_alive_count).
            node.keep_alive_count += 1
            if node.keep_alive_count > 2:
                del self.routers[rid]
                forgotten.append(rid)
                self.topology_changed = True
        self._forgotten = self._forgotten + forgotten

    # -- views ---------------------------------------------------------------------------

    def collection(self) -> Mapping[str, Mapping[str, int]]:
        """{router: {peer: cost}} for path computation, as qdrouterd builds it: my link state
        first, then every router known (no peers while its link state has not arrived, or
        after it expired), in the order they became known (see protocol/paths.py)."""
        result: Dict[str, Mapping[str, int]] = {self.my_id: self.my_ls.peers}
        for rid, node in self.routers.items():
            result[rid] = node.link_state.peers
        return result

    def advertisement(self, mobile_seq: int, instance: int) -> RouterAdvertisement:
        return RouterAdvertisement(self.my_id, self.my_ls.ls_seq, mobile_seq, instance, self.area,
                                   multicast_scheme=self.multicast_scheme)
