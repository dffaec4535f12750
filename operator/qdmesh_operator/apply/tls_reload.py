"""Routers load renewed TLS material without a restart: each router whose sslProfile reports
other material than its Secret holds is asked to load its files again (an sslProfile UPDATE
with the next ``ordinal``, a qdmesh extension of management).

Kubernetes updates a mounted Secret's files some time after the Secret changed (a minute or
so), so a router may load the same files again and still report the old material: it is then
*waiting*, and asked again at the next reconciliation.  Once EVERY router runs the new
material, each replaces its router-to-router connections made with older material, one at a
time, each after its successor is up (``oldestValidOrdinal``): the routers accepting the new
connections then run the new material too, so no connection is left made with the old.  Edge
routers replace their uplinks the same way once every interior router runs its new material.  A
router that refuses the UPDATE (an image without run-time TLS) is reported: it loads the
material when it restarts."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Sequence

from qdrouter.tools.management_client import ManagementClient, ManagementConnectionError, ManagementError

from ..model.entities import LONG_TYPE
from ..tls.credentials import TlsFiles
from ..tls.live import LiveProfile
from .management import ClientPool, RouterOutcome

PROFILE_TYPE = LONG_TYPE["sslProfile"]


@dataclass
class TlsReload:
    """What one router runs, after this reconciliation asked it to load what it should."""

    router_id: str
    #: Profiles that now run their Secret's material and did not before (loaded live).
    loaded: List[str] = field(default_factory=list)
    #: Profiles asked to load again that still report other material (files not updated yet).
    waiting: List[str] = field(default_factory=list)
    #: Why a profile could not be loaded at run time, by profile.
    refused: Dict[str, str] = field(default_factory=dict)
    #: The router's sslProfile rows after this time, by profile.
    rows: Dict[str, Mapping[str, Any]] = field(default_factory=dict)
    #: Profiles whose older connections the router was asked to replace this time.
    replacing: List[str] = field(default_factory=list)

    @property
    def current(self) -> bool:
        """Every profile runs what its Secret holds."""
        return not self.waiting and not self.refused


def _row(rows: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    return next((r for r in rows if r.get("name") == name), None)


def _ordinal(row: Mapping[str, Any]) -> int:
    try:
        return int(row.get("ordinal") or 0)
    except (TypeError, ValueError):
        return 0


def _load(client: ManagementClient, row: Mapping[str, Any], profile: LiveProfile, done: TlsReload) -> None:
    """One profile on one router: load its files again and read back what it runs."""
    try:
        client.update(PROFILE_TYPE, {"ordinal": _ordinal(row) + 1}, name=profile.profile)
        now = client.read(PROFILE_TYPE, name=profile.profile)
    except ManagementConnectionError:
        raise
    except ManagementError as e:
        done.refused[profile.profile] = f"sslProfile {profile.profile!r}: {e}"
        return
    done.rows[profile.profile] = now
    if profile.material.matches(now):
        done.loaded.append(profile.profile)
    else:
        done.waiting.append(profile.profile)


def reload_router(router_id: str, client_of: Any, rows: Sequence[Mapping[str, Any]],
                  profiles: Sequence[LiveProfile]) -> TlsReload:
    """``rows``: the router's sslProfile rows as read this time; ``client_of()``: a
    management client, asked for only when something must be loaded.  Profiles the router
    does not have (config not rolled out yet) are left alone."""
    done = TlsReload(router_id)
    for profile in profiles:
        row = _row(rows, profile.profile)
        if row is not None:
            done.rows[profile.profile] = row
        if row is None or profile.material.matches(row):
            continue
        try:
            _load(client_of(), row, profile, done)
        except ManagementConnectionError as e:
            done.refused[profile.profile] = f"router {router_id}: {e}"
            break
    return done


def reload_routers(outcomes: Mapping[str, RouterOutcome], profiles: Sequence[LiveProfile], *,
                   pool: ClientPool, tls: TlsFiles | None, verify_name: bool = True) -> Dict[str, TlsReload]:
    """Every router that answered this time, in parallel; the others load the Secrets' files
    when they start."""
    reachable = {rid: o for rid, o in outcomes.items() if o.reachable}
    if not profiles or not reachable:
        return {rid: TlsReload(rid) for rid in reachable}

    def one(outcome: RouterOutcome) -> TlsReload:
        def client_of() -> ManagementClient:
            return pool.get(outcome.url, tls if outcome.url.startswith("amqps:") else None,
                            verify_name=verify_name)

        return reload_router(outcome.router_id, client_of, outcome.live.get("sslProfile", []), profiles)

    with ThreadPoolExecutor(max_workers=min(16, len(reachable)), thread_name_prefix="qdmesh-tls") as workers:
        futures = {rid: workers.submit(one, o) for rid, o in reachable.items()}
        return {rid: f.result() for rid, f in futures.items()}


def replace_old_connections(reloads: Mapping[str, TlsReload], outcomes: Mapping[str, RouterOutcome],
                            profiles: Sequence[LiveProfile], expected: int, *, pool: ClientPool,
                            tls: TlsFiles | None, verify_name: bool = True) -> None:
    """Once all ``expected`` routers run a router-to-router profile's material, each router
    whose connections may still be older than what it runs (``oldestValidOrdinal`` below its
    ``ordinal``) is asked to replace them.  Before that, a connection replaced early would be
    accepted by a router still on the old material."""
    for profile in profiles:
        if not profile.replace_connections or len(reloads) < expected:
            continue
        rows = {rid: r.rows.get(profile.profile) for rid, r in reloads.items()}
        if any(row is None or not profile.material.matches(row) for row in rows.values()):
            continue
        for rid, row in rows.items():
            assert row is not None
            ordinal = _ordinal(row)
            if int(row.get("oldestValidOrdinal") or 0) >= ordinal:
                continue
            url = outcomes[rid].url
            try:
                client = pool.get(url, tls if url.startswith("amqps:") else None, verify_name=verify_name)
                client.update(PROFILE_TYPE, {"ordinal": ordinal, "oldestValidOrdinal": ordinal},
                              name=profile.profile)
            except ManagementError as e:  # a lost connection included: tried again next time
                if isinstance(e, ManagementConnectionError):
                    pool.discard(url)
                reloads[rid].refused[profile.profile] = (f"sslProfile {profile.profile!r} loaded, but its "
                                                         f"older connections cannot be replaced: {e}")
                continue
            reloads[rid].replacing.append(profile.profile)


def replace_edge_connections(reloads: Mapping[str, TlsReload], outcomes: Mapping[str, RouterOutcome],
                             profiles: Sequence[LiveProfile], *, interior_current: bool, pool: ClientPool,
                             tls: TlsFiles | None, verify_name: bool = True) -> None:
    """Edge routers' connections to the interior: each edge router that runs its profile's
    new material replaces its connections made with older material (the router moves its
    uplink to the replacement once it is open, then closes the old one when nothing on it is
    unsettled), but only once ``interior_current``: every interior router runs its new
    material, so it accepts the certificate the edge now presents and presents one the edge
    now trusts.  Edge routers accept no router connections, so each goes on its own."""
    if not interior_current:
        return
    for rid, reload in reloads.items():
        if rid in outcomes:
            replace_old_connections({rid: reload}, {rid: outcomes[rid]}, profiles, 1, pool=pool, tls=tls,
                                    verify_name=verify_name)


def running_revision(reloads: Mapping[str, TlsReload], expected: int, revision: str | None) -> str | None:
    """``revision`` when all ``expected`` routers answered and run their Secrets' material
    (what a step of a CA rotation waits for), else None."""
    if revision is None or expected <= 0 or len(reloads) < expected:
        return None
    return revision if all(r.current for r in reloads.values()) else None
