"""What a listener (or connector) imposes on each of its connections, from its attributes."""

from __future__ import annotations

from typing import Any

from ...core.links import DEFAULT_LINK_CAPACITY

# AMQP's smallest max-frame-size; qdrouterd raises a listener's smaller maxFrameSize to it.
MIN_MAX_FRAME_SIZE = 512
# Proton's (and qdrouterd's) ceiling on sessions per connection: channel-max 32767.
MAX_SESSIONS = 32768


class ListenerSettings:
    """What a listener (or connector) imposes on each of its connections."""

    __slots__ = (
        "authenticate_peer",
        "cost",
        "handshake_timeout_s",
        "idle_timeout_ms",
        "link_capacity",
        "max_frame_size",
        "max_sessions",
        "name",
        "open_properties",
        "password",
        "policy_vhost",
        "require_encryption",
        "role",
        "sasl_mechanisms",
        "session_capacity",
        "ssl_domain",
        "strip_in",
        "strip_out",
        "tls",
        "username",
        "verify_hostname",
    )

    def __init__(
        self,
        name: str,
        role: str = "normal",
        sasl_mechanisms: str = "ANONYMOUS",
        idle_timeout_ms: int = 16000,
        max_frame_size: int = 16384,
        strip_annotations: str = "both",
        authenticate_peer: bool = False,
        cost: int = 1,
        username: str | None = None,
        password: str | None = None,
        require_encryption: bool = False,
        tls: Any = None,
        ssl_domain: Any = None,
        verify_hostname: bool = True,
        handshake_timeout_s: float = 0.0,
        link_capacity: int = DEFAULT_LINK_CAPACITY,
        policy_vhost: str | None = None,
        max_sessions: int = MAX_SESSIONS,
        max_session_frames: int = 0,
        open_properties: bytes | None = None,
    ) -> None:
        self.name = name
        # failoverUrls and openProperties, encoded (amqp/connections/open_properties.py).
        self.open_properties = open_properties
        # maxSessions, as qdrouterd reads it: 0 or above 32768 is 32768; the connection's
        # channel-max is one less, so a peer's begin on a higher channel closes it.
        self.max_sessions = max_sessions if 0 < max_sessions <= MAX_SESSIONS else MAX_SESSIONS
        # maxSessionFrames: each session's incoming capacity in bytes, maxFrameSize * frames,
        # so that its incoming-window is maxSessionFrames (0: proton's unbounded default).
        max_frame_size = max(max_frame_size, MIN_MAX_FRAME_SIZE)
        self.session_capacity = max_frame_size * max_session_frames
        # A listener's policyVhost: the vhost its connections are policed by, whatever
        # hostname their open names (as qdrouterd's policy.c takes it).
        self.policy_vhost = policy_vhost
        # linkCapacity: the credit window of producers' links on these connections.
        self.link_capacity = link_capacity
        # initialHandshakeTimeoutSeconds: a peer must have opened within this time (0: forever).
        self.handshake_timeout_s = handshake_timeout_s
        self.require_encryption = require_encryption
        # TLS: the sslProfile (amqp/connections/tls.py TlsProfile) and the proton domain built from it.
        self.tls = tls
        self.ssl_domain = ssl_domain
        self.verify_hostname = verify_hostname
        self.cost = cost
        self.username = username
        self.password = password
        self.role = role
        self.sasl_mechanisms = sasl_mechanisms
        self.idle_timeout_ms = idle_timeout_ms
        self.max_frame_size = max_frame_size
        self.strip_in = strip_annotations in ("in", "both")
        self.strip_out = strip_annotations in ("out", "both")
        self.authenticate_peer = authenticate_peer
