"""Leader election on a coordination.k8s.io/v1 Lease, so that several operator replicas can run
and only one reconciles.

The protocol is client-go's (k8s.io/client-go/tools/leaderelection), so `kubectl get lease`
reads as it does for any controller: the holder writes its identity and renews ``renewTime``
every retry period; the others take the Lease over once it has not changed for
``leaseDurationSeconds`` by their own clock (never by comparing clocks across machines), or
at once when the holder released it (empty ``holderIdentity``). Writes carry the
resourceVersion they read, so of two replicas racing for the Lease one wins and the other
gets a conflict. A holder that cannot renew within the renew deadline has lost: it must stop
reconciling at once (main.py exits), since another replica may take over once the lease
duration has passed. So has one that finds another holder's name in the Lease.

The deadline is kept by the clock, not by the API server's answers: every Lease request is
given the time left before the deadline as its timeout (an API server that hangs, rather than
refuses, would otherwise hold the renewal forever), and a watchdog thread calls ``on_lost`` the
moment the deadline passes, whatever the renewal thread is waiting for.  ``may_reconcile``
tells the handlers whether this replica still holds a Lease it renewed within the deadline.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Tuple

log = logging.getLogger("qdmesh.leader")

#: The elector of this process once it leads (main.py sets it); None without leader election.
ACTIVE: LeaderElector | None = None


def may_reconcile() -> bool:
    """False once this replica's Lease is past its renew deadline (it is about to exit): no
    reconciliation starts and no status is written then.  True without leader election."""
    return ACTIVE is None or ACTIVE.fresh()


@dataclass(frozen=True)
class LeaseSettings:
    name: str
    namespace: str
    identity: str
    # client-go's defaults: 15 s, 10 s, 2 s.
    duration_s: float = 15.0
    renew_deadline_s: float = 10.0
    retry_s: float = 2.0
    #: The Lease's owner reference ({apiVersion, kind, name, uid}): the garbage collector
    #: deletes the Lease with it (the chart: the operator's Deployment).  None: no owner.
    owner: Dict[str, Any] | None = None

    def problem(self) -> str | None:
        """Why these timings cannot work (client-go's checks), or None."""
        if not self.retry_s > 0:
            return "the retry period must be positive"
        if not self.renew_deadline_s > self.retry_s:
            return "the renew deadline must be longer than the retry period"
        if not self.duration_s > self.renew_deadline_s:
            return "the lease duration must be longer than the renew deadline"
        return None


def _micro(moment: datetime.datetime | None = None) -> str:
    """A Kubernetes MicroTime (always six fractional digits: the API server's parser wants
    them, and Python's isoformat drops them when they are zero); now by default."""
    moment = moment or datetime.datetime.now(datetime.timezone.utc)
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, api_client: Any, settings: LeaseSettings) -> None:
        from kubernetes import client

        self.api: Any = client.CoordinationV1Api(api_client)
        self.settings = settings
        # What we last saw of the Lease, and when (monotonic): it is expired once it has not
        # changed for the lease duration.
        self._observed: Tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._last_renewal = 0.0
        self._stop_renewing = threading.Event()
        self._renewer: threading.Thread | None = None
        self._watchdog: threading.Thread | None = None

    # -- one attempt -----------------------------------------------------------------------
    def _call(self, what: str, method: Callable[..., Any], *args: Any, timeout: float,
              expected: Tuple[int, ...] = (), **kwargs: Any) -> Tuple[Any, int]:
        """``method(*args)`` and 0, or None and the HTTP status it failed with (-1: the API
        server could not be reached or did not answer within ``timeout`` seconds). Failures
        other than ``expected`` are logged; none escapes, so the renewal thread never dies of
        one (it must judge the deadline)."""
        from kubernetes.client.rest import ApiException

        s = self.settings
        try:
            return method(*args, _request_timeout=max(timeout, 0.1), **kwargs), 0
        except ApiException as e:
            if e.status not in expected:
                log.warning("%s Lease %s/%s failed: %s %s", what, s.namespace, s.name, e.status, e.reason)
            return None, int(e.status or -1)
        except Exception as e:  # urllib3's and the socket's errors: the API server is away
            log.warning("%s Lease %s/%s failed: %s", what, s.namespace, s.name, e)
            return None, -1

    def _time_left(self, started: float) -> float:
        """Seconds a request of an attempt started at ``started`` may take: until the renew
        deadline while we hold the Lease, a renew deadline otherwise."""
        if self.fresh():
            return self._last_renewal + self.settings.renew_deadline_s - time.monotonic()
        return self.settings.renew_deadline_s - (time.monotonic() - started)

    def try_acquire_or_renew(self) -> bool:
        """One attempt to hold the Lease; True when we hold it after it."""
        s = self.settings
        started = time.monotonic()
        lease, status = self._call("reading", self.api.read_namespaced_lease, s.name, s.namespace,
                                   timeout=self._time_left(started), expected=(404,))
        if status == 404:
            return self._create(started)
        if status:
            return False
        spec = lease.spec
        holder = spec.holder_identity or ""
        record = (holder, str(spec.renew_time), spec.lease_transitions)
        now = time.monotonic()
        if record != self._observed:
            self._observed, self._observed_at = record, now
        duration = spec.lease_duration_seconds or s.duration_s
        if holder and holder != s.identity and now - self._observed_at < duration:
            return False  # somebody else holds it, and renews it
        if holder != s.identity:
            spec.lease_transitions = (spec.lease_transitions or 0) + 1
            spec.acquire_time = _micro()
            spec.holder_identity = s.identity
        elif isinstance(spec.acquire_time, datetime.datetime):
            spec.acquire_time = _micro(spec.acquire_time)
        spec.renew_time = _micro()
        spec.lease_duration_seconds = int(s.duration_s)
        # 409: another replica wrote first.
        _, status = self._call("updating", self.api.replace_namespaced_lease, s.name, s.namespace, lease,
                               timeout=self._time_left(started), expected=(409,))
        if status:
            return False
        if holder != s.identity:
            log.info("became the leader (Lease %s/%s, identity %s)", s.namespace, s.name, s.identity)
        # From when the attempt started: the others count the lease duration from when they
        # see the new renewTime, which is later, so this deadline always passes first.
        self._last_renewal = started
        return True

    def fresh(self) -> bool:
        """Whether we renewed the Lease within the renew deadline."""
        return bool(self._last_renewal) and \
            time.monotonic() - self._last_renewal < self.settings.renew_deadline_s

    def _create(self, started: float) -> bool:
        s = self.settings
        now = _micro()
        metadata: Dict[str, Any] = {"name": s.name, "namespace": s.namespace}
        if s.owner:
            metadata["ownerReferences"] = [s.owner]
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata,
                "spec": {"holderIdentity": s.identity, "leaseDurationSeconds": int(s.duration_s),
                         "acquireTime": now, "renewTime": now, "leaseTransitions": 0}}
        # 409: another replica created it first.
        _, status = self._call("creating", self.api.create_namespaced_lease, s.namespace, body,
                               timeout=self._time_left(started), expected=(409,))
        if status:
            return False
        log.info("became the leader (created Lease %s/%s, identity %s)", s.namespace, s.name, s.identity)
        self._last_renewal = started
        return True

    # -- lifecycle -------------------------------------------------------------------------
    def acquire(self, stop: threading.Event) -> bool:
        """Waits until we hold the Lease (True), or until ``stop`` is set (False)."""
        s = self.settings
        log.info("waiting for Lease %s/%s (identity %s)", s.namespace, s.name, s.identity)
        while not stop.is_set():
            if self.try_acquire_or_renew():
                return True
            stop.wait(s.retry_s)
        return False

    def keep(self, on_lost: Callable[[], None]) -> None:
        """Renews the Lease every retry period in a thread until release(); calls ``on_lost``
        once, from whichever thread notices first: the renewal thread when another replica's
        name is in the Lease, the watchdog the moment the renew deadline passes without a
        renewal (even while a request to an API server that does not answer is under way)."""
        once = threading.Lock()

        def lose(why: str, *args: Any) -> None:
            if once.acquire(blocking=False) and not self._stop_renewing.is_set():
                log.error(why, *args)
                on_lost()

        def renew() -> None:
            s = self.settings
            while not self._stop_renewing.wait(s.retry_s):
                if self.try_acquire_or_renew():
                    continue
                holder = self._observed[0] if self._observed else ""
                if holder and holder != s.identity:
                    # Another replica holds it now: stop at once, not at the deadline.
                    lose("lost Lease %s/%s to %s", s.namespace, s.name, holder)
                    return

        def watch() -> None:
            s = self.settings
            tick = min(0.1, s.retry_s / 4)
            while not self._stop_renewing.wait(tick):
                if not self.fresh():
                    lose("lost Lease %s/%s: not renewed for %gs (renew deadline)",
                         s.namespace, s.name, s.renew_deadline_s)
                    return

        self._renewer = threading.Thread(target=renew, name="lease-renewal", daemon=True)
        self._watchdog = threading.Thread(target=watch, name="lease-watchdog", daemon=True)
        self._renewer.start()
        self._watchdog.start()

    def release(self) -> None:
        """Stops renewing, and deletes the Lease if we hold it (only the version we read: one
        another replica took meanwhile stays), so that a standby takes over at once and an
        uninstalled operator leaves no Lease behind."""
        from kubernetes import client

        self._stop_renewing.set()
        for thread in (self._renewer, self._watchdog):
            if thread is not None:
                thread.join(self.settings.renew_deadline_s + 1)
        s = self.settings
        timeout = s.renew_deadline_s
        lease, status = self._call("reading", self.api.read_namespaced_lease, s.name, s.namespace,
                                   timeout=timeout, expected=(404,))
        if status or (lease.spec.holder_identity or "") != s.identity:
            return
        options = client.V1DeleteOptions(preconditions=client.V1Preconditions(
            resource_version=lease.metadata.resource_version))
        _, status = self._call("deleting", self.api.delete_namespaced_lease, s.name, s.namespace,
                               timeout=timeout, expected=(404, 409), body=options)
        if not status:
            log.info("released Lease %s/%s (deleted it)", s.namespace, s.name)
