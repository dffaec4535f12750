"""Mobile-address synchronisation: MAU / MAR (upstream mobile_sync/mobile.c, protocol v1).

* Local changes are batched; on the next tick, if anything changed, mobile_seq is bumped and
  a differential MAU {add, del, hints} goes to all routers.  The caller then sends an RA so
  routers that missed the MAU notice the new mobile_seq.
* An RA announcing a mobile_seq ahead of ours for that router -> MAR {have_seq}.
* A MAR from a router behind us -> absolute MAU {exist, hints} to that router only.
* A differential MAU that is not exactly the next sequence -> ignored, MAR sent (once).
* A MAR unanswered after MAR_RETRY seconds is sent again while the router's last RA still
  shows it ahead (an extension: upstream waits for the next RA, up to raIntervalFlux later).

Addresses on the wire are upstream's address hash keys: "M" + phase + address for mobile
addresses ("M0queue").  The public API uses plain addresses (phase 0) and converts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Set

from qdrouter.protocol.messages import MobileAddressRequest, MobileAddressUpdate

#: Treatment codes carried in 'hints' (qd_address_treatment_t in upstream's router.h).
TREATMENT_MULTICAST_FLOOD = 0
TREATMENT_MULTICAST_ONCE = 1
TREATMENT_ANYCAST_CLOSEST = 2
TREATMENT_ANYCAST_BALANCED = 3
TREATMENT_LINK_BALANCED = 4


def encode_address(address: str, phase: int = 0) -> str:
    """Plain mobile address -> upstream hash key carried in MAU lists."""
    return f"M{phase}{address}"


#: Upstream's hash prefixes of link-route destinations (iterator.h): prefix in/out, pattern
#: in/out. A router advertises one while the route's container is connected to it.
LINK_ROUTE_KEY_PREFIXES = "CDEF"


def decode_address(key: str) -> str:
    """Hash key -> the router core's address key: "M0addr" -> "addr", "M<n>addr" (a
    waypoint phase) -> "\x00<n>\x00addr" (the core's phased key, see
    core.address_table.phased); other keys (link routes, ...) are returned unchanged."""
    if len(key) >= 2 and key[0] == "M" and key[1].isdigit():
        return key[2:] if key[1] == "0" else f"\x00{key[1]}\x00{key[2:]}"
    if len(key) >= 2 and key[0] == "H":
        # An edge router attached to the advertising router (upstream's edge-summary class).
        return f"_edge/{key[1:]}"
    return key


def encode_core_key(key: str) -> str:
    """The router core's address key (plain or phased) -> upstream hash key."""
    if key.startswith("_edge/"):
        return "H" + key[len("_edge/"):]
    if key.startswith("\x00"):
        phase, _, address = key[1:].partition("\x00")
        return encode_address(address, int(phase))
    return encode_address(key)


#: Seconds before an unanswered MAR is repeated. The answer is lost when the other router
#: has no path back to us yet: qdrouterd computes paths once a second and drops a reply it
#: cannot route, so a router that just (re)joined would otherwise wait for the next RA
#: (raIntervalFlux, 4 s) while its neighbours already route that router's traffic through
#: it, and it releases what it has no address for.
MAR_RETRY = 1.0


@dataclass
class _Remote:
    mobile_seq: int = 0
    keys: Dict[str, int | None] = field(default_factory=dict)  # hash key -> hint
    mar_sent: bool = False
    advertised_seq: int = 0  # the mobile_seq of its last RA
    mar_at: float | None = None  # when the outstanding MAR was sent (None: not timed)


class MobileAddressSync:
    def __init__(self, my_id: str, area: str) -> None:
        self.my_id = my_id
        self.area = area
        self.mobile_seq = 0
        self._local: Dict[str, int] = {}  # hash key -> hint, as last announced
        self._pending: Dict[str, int | None] = {}  # key -> hint (added) or None (deleted)
        self._remote: Dict[str, _Remote] = {}
        # Leaving the network (a graceful drain): no local address is announced any more.
        self.withdrawn = False

    # -- local addresses -----------------------------------------------------------------

    def withdraw(self) -> None:
        """Announce the deletion of every local address (next flush); ignore later adds."""
        self.withdrawn = True
        self._pending = {key: None for key in self._local}

    def add_local(self, key: str, hint: int) -> None:
        if self.withdrawn:
            return
        if key in self._local:
            self._pending.pop(key, None)  # a pending delete is cancelled
        else:
            self._pending[key] = hint

    def remove_local(self, key: str) -> None:
        if key in self._local:
            self._pending[key] = None
        else:
            self._pending.pop(key, None)  # a pending add is cancelled

    def local_keys(self) -> Set[str]:
        return set(self._local)

    def flush(self) -> MobileAddressUpdate | None:
        """The differential MAU for changes since the last flush, or None."""
        if not self._pending:
            return None
        added = [k for k, h in self._pending.items() if h is not None]
        deleted = [k for k, h in self._pending.items() if h is None]
        hints: List[int] = []
        for k in added:
            hint = self._pending[k]
            assert hint is not None
            self._local[k] = hint
            hints.append(hint)
        for k in deleted:
            self._local.pop(k, None)
        self._pending.clear()
        self.mobile_seq += 1
        return MobileAddressUpdate(self.my_id, self.mobile_seq, add=added, delete=deleted, hints=hints,
                                   area=self.area)

    # -- protocol -----------------------------------------------------------------------

    def on_ra(self, router_id: str, mobile_seq: int, now: float | None = None) -> MobileAddressRequest | None:
        remote = self._remote.setdefault(router_id, _Remote())
        remote.advertised_seq = mobile_seq
        if remote.mobile_seq < mobile_seq:
            return self._request(remote, now)
        return None

    def _request(self, remote: _Remote, now: float | None = None) -> MobileAddressRequest:
        remote.mar_sent = True
        remote.mar_at = now
        return MobileAddressRequest(self.my_id, remote.mobile_seq, self.area)

    def overdue_requests(self, now: float) -> Dict[str, MobileAddressRequest]:
        """MARs to repeat: sent over MAR_RETRY seconds ago, and the router's RA still
        shows addresses we lack."""
        return {rid: self._request(remote, now) for rid, remote in self._remote.items()
                if remote.mar_sent and remote.mar_at is not None and now - remote.mar_at >= MAR_RETRY
                and remote.mobile_seq < remote.advertised_seq}

    def on_mar(self, msg: MobileAddressRequest) -> MobileAddressUpdate | None:
        """Absolute MAU for a requester behind us (the announced state; pending excluded)."""
        if msg.id == self.my_id or msg.have_seq >= self.mobile_seq:
            return None
        keys = sorted(self._local)
        return MobileAddressUpdate(self.my_id, self.mobile_seq, exist=keys,
                                   hints=[self._local[k] for k in keys], area=self.area)

    def on_mau(self, msg: MobileAddressUpdate,
               now: float | None = None) -> tuple[bool, MobileAddressRequest | None]:
        """Apply a MAU: (addresses changed, MAR to send if we fell out of sequence)."""
        if msg.id == self.my_id:
            return False, None
        remote = self._remote.setdefault(msg.id, _Remote())
        if not msg.is_absolute and remote.mobile_seq != msg.mobile_seq - 1:
            if remote.mobile_seq >= msg.mobile_seq:
                return False, None  # duplicate or stale
            remote.advertised_seq = max(remote.advertised_seq, msg.mobile_seq)
            if remote.mar_sent:
                return False, None  # already asked; the absolute MAU will catch us up
            return False, self._request(remote, now)
        if msg.is_absolute and msg.mobile_seq == remote.mobile_seq:
            return False, None
        remote.mar_sent = False
        remote.mar_at = None
        remote.mobile_seq = msg.mobile_seq
        remote.advertised_seq = max(remote.advertised_seq, msg.mobile_seq)
        listed = msg.exist if msg.is_absolute else msg.add
        assert listed is not None
        hints: List[int | None] = list(msg.hints) if msg.hints and len(msg.hints) == len(listed) else []
        if len(hints) != len(listed):
            hints = [None] * len(listed)
        before = dict(remote.keys)
        if msg.is_absolute:
            remote.keys = {}
        for key, hint in zip(listed, hints):
            remote.keys[key] = hint
        for key in msg.delete or []:
            remote.keys.pop(key, None)
        return set(before) != set(remote.keys), None

    def forget(self, router_id: str) -> bool:
        """Drop a router's addresses (it vanished or restarted); True if any were held."""
        remote = self._remote.pop(router_id, None)
        return bool(remote and remote.keys)

    def remote_mobile_seq(self, router_id: str) -> int:
        remote = self._remote.get(router_id)
        return remote.mobile_seq if remote else 0

    def remote_hints(self) -> Dict[str, int]:
        """{hash key: treatment hint} from the routers that announced the key with one (the
        first router by id that gave one, so every router picks the same)."""
        result: Dict[str, int] = {}
        for rid in sorted(self._remote):
            for key, hint in self._remote[rid].keys.items():
                if hint is not None and key not in result:
                    result[key] = hint
        return result

    def remote_keys(self) -> Dict[str, Set[str]]:
        """{hash key: routers that have a destination for it}."""
        result: Dict[str, Set[str]] = {}
        for rid, remote in self._remote.items():
            for key in remote.keys:
                result.setdefault(key, set()).add(rid)
        return result
