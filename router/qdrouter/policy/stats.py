"""Counters behind the vhostStats entity and the policy singleton's counters."""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict


class VhostStats:
    __slots__ = ("connections_approved", "connections_denied", "hostname", "max_message_size_denied",
                 "per_host", "per_user", "receiver_denied", "sender_denied", "session_denied",
                 "target_denied", "user_id_denied")

    def __init__(self, hostname: str) -> None:
        self.hostname = hostname
        self.connections_approved = 0
        self.connections_denied = 0
        self.session_denied = 0
        self.sender_denied = 0
        self.receiver_denied = 0
        self.max_message_size_denied = 0
        self.user_id_denied = 0
        self.target_denied = 0
        self.per_user: Counter[str] = Counter()
        self.per_host: Counter[str] = Counter()

    @property
    def current(self) -> int:
        return sum(self.per_user.values())

    def row(self) -> Dict[str, Any]:
        return {
            "name": self.hostname, "identity": self.hostname, "id": self.hostname, "hostname": self.hostname,
            "connectionsApproved": self.connections_approved, "connectionsDenied": self.connections_denied,
            "connectionsCurrent": self.current,
            "perUserState": {user: count for user, count in self.per_user.items() if count},
            "perHostState": {host: count for host, count in self.per_host.items() if count},
            "sessionDenied": self.session_denied, "senderDenied": self.sender_denied,
            "receiverDenied": self.receiver_denied, "maxMessageSizeDenied": self.max_message_size_denied,
            "userIdDenied": self.user_id_denied, "targetDenied": self.target_denied,
        }


class GlobalStats:
    __slots__ = ("connections_current", "connections_denied", "connections_processed", "links_denied",
                 "max_message_size_denied", "total_denials")

    def __init__(self) -> None:
        self.connections_processed = 0
        self.connections_denied = 0
        self.connections_current = 0
        self.links_denied = 0
        self.max_message_size_denied = 0
        self.total_denials = 0

    def row(self) -> Dict[str, Any]:
        return {"connectionsProcessed": self.connections_processed,
                "connectionsDenied": self.connections_denied,
                "connectionsCurrent": self.connections_current, "linksDenied": self.links_denied,
                "maxMessageSizeDenied": self.max_message_size_denied, "totalDenials": self.total_denials}
