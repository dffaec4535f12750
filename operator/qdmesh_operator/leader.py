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
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Tuple

log = logging.getLogger("qdmesh.leader")


@dataclass(frozen=True)
class LeaseSettings:
    name: str
    namespace: str
    identity: str
    # client-go's defaults: 15 s, 10 s, 2 s.
    duration_s: float = 15.0
    renew_deadline_s: float = 10.0
    retry_s: float = 2.0

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

    # -- one attempt -----------------------------------------------------------------------
    def _call(self, what: str, method: Callable[..., Any], *args: Any,
              expected: Tuple[int, ...] = ()) -> Tuple[Any, int]:
        """``method(*args)`` and 0, or None and the HTTP status it failed with (-1: the API
        server could not be reached). Failures other than ``expected`` are logged; none
        escapes, so the renewal thread never dies of one (it must judge the deadline)."""
        from kubernetes.client.rest import ApiException

        s = self.settings
        try:
            return method(*args), 0
        except ApiException as e:
            if e.status not in expected:
                log.warning("%s Lease %s/%s failed: %s %s", what, s.namespace, s.name, e.status, e.reason)
            return None, int(e.status or -1)
        except Exception as e:  # urllib3's and the socket's errors: the API server is away
            log.warning("%s Lease %s/%s failed: %s", what, s.namespace, s.name, e)
            return None, -1

    def try_acquire_or_renew(self) -> bool:
        """One attempt to hold the Lease; True when we hold it after it."""
        s = self.settings
        lease, status = self._call("reading", self.api.read_namespaced_lease, s.name, s.namespace,
                                   expected=(404,))
        if status == 404:
            return self._create()
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
                               expected=(409,))
        if status:
            return False
        if holder != s.identity:
            log.info("became the leader (Lease %s/%s, identity %s)", s.namespace, s.name, s.identity)
        self._last_renewal = time.monotonic()
        return True

    def _create(self) -> bool:
        s = self.settings
        now = _micro()
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": s.name, "namespace": s.namespace},
                "spec": {"holderIdentity": s.identity, "leaseDurationSeconds": int(s.duration_s),
                         "acquireTime": now, "renewTime": now, "leaseTransitions": 0}}
        # 409: another replica created it first.
        _, status = self._call("creating", self.api.create_namespaced_lease, s.namespace, body,
                               expected=(409,))
        if status:
            return False
        log.info("became the leader (created Lease %s/%s, identity %s)", s.namespace, s.name, s.identity)
        self._last_renewal = time.monotonic()
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
        once if no renewal succeeds within the renew deadline."""

        def renew() -> None:
            s = self.settings
            while not self._stop_renewing.wait(s.retry_s):
                if self.try_acquire_or_renew():
                    continue
                holder = self._observed[0] if self._observed else ""
                if holder and holder != s.identity:
                    # Another replica holds it now: stop at once, not at the deadline.
                    log.error("lost Lease %s/%s to %s", s.namespace, s.name, holder)
                elif time.monotonic() - self._last_renewal >= s.renew_deadline_s:
                    log.error("lost Lease %s/%s: not renewed for %gs",
                              s.namespace, s.name, s.renew_deadline_s)
                else:
                    continue
                on_lost()
                return

        self._renewer = threading.Thread(target=renew, name="lease-renewal", daemon=True)
        self._renewer.start()

    def release(self) -> None:
        """Stops renewing, and gives the Lease up if we hold it, so that a standby takes over
        at once."""
        self._stop_renewing.set()
        if self._renewer is not None:
            self._renewer.join(self.settings.retry_s + 5)
        s = self.settings
        lease, status = self._call("reading", self.api.read_namespaced_lease, s.name, s.namespace)
        if status or (lease.spec.holder_identity or "") != s.identity:
            return
        lease.spec.holder_identity = None
        lease.spec.lease_duration_seconds = 1
        lease.spec.renew_time = _micro()
        if isinstance(lease.spec.acquire_time, datetime.datetime):
            lease.spec.acquire_time = _micro(lease.spec.acquire_time)
        _, status = self._call("releasing", self.api.replace_namespaced_lease, s.name, s.namespace, lease)
        if not status:
            log.info("released Lease %s/%s", s.namespace, s.name)
