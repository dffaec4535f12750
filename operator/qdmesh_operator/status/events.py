"""Posting the Events a reconciliation produced (core/v1 Events, as ``kubectl describe`` shows
them).  Events only tell: a failure to post one is logged, never retried and never raised.  A
namespace being deleted refuses new objects (403, reason NamespaceTerminating) and a deleted
one is not found (404): both are expected while a namespace goes, so they are said once per
namespace, at INFO, rather than as errors at every attempt."""

from __future__ import annotations

import datetime
import logging
import os
import socket
from typing import Any, Dict, Set

from kubernetes.client.rest import ApiException

from .report import Event

log = logging.getLogger("qdmesh.operator")
COMPONENT = "qdmesh-operator"
MAX_MESSAGE = 1024


def namespace_going(error: ApiException) -> bool:
    """Whether the API server refused because the namespace is being deleted or is gone."""
    body = str(error.body or "")
    return (error.status == 403 and "NamespaceTerminating" in body) or \
        (error.status == 404 and '"kind":"namespaces"' in body.replace(" ", ""))


class EventPoster:
    def __init__(self, core: Any) -> None:
        self.core = core
        self.instance = os.environ.get("POD_NAME") or socket.gethostname()
        self._told: Set[str] = set()

    def body(self, event: Event) -> Dict[str, Any]:
        meta = event.target.get("metadata") or {}
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        message = event.message
        if len(message) > MAX_MESSAGE:
            message = message[:MAX_MESSAGE - 3] + "..."
        return {
            "metadata": {"generateName": f"{meta.get('name')}.", "namespace": meta.get("namespace")},
            "involvedObject": {"apiVersion": event.target.get("apiVersion"), "kind": event.target.get("kind"),
                               "name": meta.get("name"), "namespace": meta.get("namespace"),
                               "uid": meta.get("uid")},
            "type": event.type, "reason": event.reason, "message": message, "count": 1,
            "firstTimestamp": now, "lastTimestamp": now,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT, "reportingInstance": self.instance,
        }

    def post(self, event: Event) -> bool:
        """Post ``event``; False (logged) when the API server would not take it."""
        namespace = str((event.target.get("metadata") or {}).get("namespace") or "")
        try:
            self.core.create_namespaced_event(namespace, self.body(event))
            return True
        except ApiException as e:
            if namespace_going(e):
                if namespace not in self._told:
                    self._told.add(namespace)
                    log.info("not posting Events in namespace %s: it is being deleted", namespace)
                return False
            log.warning("could not post Event %s (%s) in namespace %s: %s %s", event.reason,
                        event.type, namespace, e.status, e.reason)
        except Exception as e:  # the API server away: Events are not worth a retry
            log.warning("could not post Event %s in namespace %s: %s", event.reason, namespace, e)
        return False
