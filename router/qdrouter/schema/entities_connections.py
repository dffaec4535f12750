"""Where connections come from: listeners, connectors, and their TLS and SASL settings."""

from __future__ import annotations

from .builders import conf, entity, one_of, status
from .types import BOOLEAN, INTEGER, PATH, PROPERTIES, AttributeDef

ROLES = ("normal", "inter-router", "route-container", "edge")
ADDRESS_FAMILIES = ("IPv4", "IPv6")
STRIP_ANNOTATIONS = ("in", "out", "both", "no")
INT32_MAX = 2 ** 31 - 1
UINT32_MAX = 2 ** 32 - 1
#: Proton keeps the idle timeout in milliseconds in 32 bits.
IDLE_TIMEOUT_MAX = UINT32_MAX // 1000


def _connection_settings(kind: str) -> list[AttributeDef]:
    """Attributes listeners and connectors share; `kind` only words the descriptions."""
    return [
        conf("port", default="amqp",
             doc="Port number or service name ('amqp' is 5672, 'amqps' 5671)."
                 + (" '0' picks a free port and logs it." if kind == "listener" else "")),
        one_of("role", *ROLES, default="normal",
               doc="normal: clients; inter-router: another interior router; route-container: a "
                   "broker or other container that link routes and auto-links use; edge: an edge "
                   "router."),
        conf("cost", INTEGER, default=1, minimum=1, maximum=INT32_MAX,
             doc="Inter-router connections only: routing cost of the connection, at least 1."),
        conf("sslProfile", doc="Name of the sslProfile giving this connection's TLS settings."),
        conf("saslMechanisms", doc="Space-separated SASL mechanisms to allow."),
        conf("maxFrameSize", INTEGER, default=16384, minimum=0, maximum=UINT32_MAX,
             doc="Largest frame, in octets, proposed in the connection's open; below 512 "
                 "means 512, AMQP's smallest."),
        conf("maxSessions", INTEGER, default=32768, minimum=0, maximum=INT32_MAX,
             doc="Most sessions that may be open at once on the connection (its channel-max "
                 "is one less); 0 or above 32768 means 32768."),
        conf("maxSessionFrames", INTEGER, minimum=0, maximum=INT32_MAX,
             doc="Session incoming window, in frames of maxFrameSize; unset or 0 means "
                 "2147483647 frames."),
        conf("idleTimeoutSeconds", INTEGER, default=16, minimum=0, maximum=IDLE_TIMEOUT_MAX,
             doc="Close the connection if nothing arrives for this many seconds; 0 never does."),
        one_of("stripAnnotations", *STRIP_ANNOTATIONS, default="both",
               doc="Where to remove the router's message annotations: in (on arrival), out (on "
                   "departure), both, or no."),
        conf("linkCapacity", INTEGER, minimum=1, maximum=INT32_MAX,
             doc="Credit, in deliveries, granted on each link."),
        conf("messageLoggingComponents", default="none", deprecated=("logMessage",),
             doc="Comma-separated message parts to log for each delivery: 'none', 'all', or "
                 "property names."),
        conf("policyVhost", doc="Name of the vhost policy applied to this connection."),
        conf("openProperties", PROPERTIES,
             doc="Map of extra connection properties sent in the open frame."),
    ]


LISTENER = entity(
    "listener",
    [
        conf("host", default="",
             doc="Host name or IP literal to listen on; empty listens on every local address."),
        *_connection_settings("listener"),
        one_of("socketAddressFamily", *ADDRESS_FAMILIES, deprecated=("protocolFamily",),
               doc="Force IPv4 or IPv6; unset chooses from the address."),
        conf("authenticatePeer", BOOLEAN, default=False,
             doc="Require clients to authenticate with a SASL mechanism other than ANONYMOUS."),
        conf("saslPlugin", doc="Experimental: name of an authServicePlugin to authenticate with."),
        conf("requireEncryption", BOOLEAN, default=False,
             doc="Refuse connections that are not encrypted."),
        conf("requireSsl", BOOLEAN, default=False, doc="Refuse connections that do not use TLS."),
        conf("trustedCertsFile", PATH, deprecated=("trustedCerts",),
             doc="Deprecated: use the sslProfile's caCertFile."),
        conf("initialHandshakeTimeoutSeconds", INTEGER, default=0, minimum=0, maximum=INT32_MAX,
             doc="Close a connection whose peer has not sent its protocol header within this many "
                 "seconds; 0 waits forever."),
        conf("multiTenant", BOOLEAN, default=False,
             doc="Prefix addresses with the vhost the client connected to, isolating tenants."),
        conf("failoverUrls", deprecated=("failoverList",),
             doc="Comma-separated failover URLs offered to clients in the open frame."),
        conf("healthz", BOOLEAN, default=True,
             doc="HTTP listeners: answer liveness checks at /healthz."),
        conf("metrics", BOOLEAN, default=True,
             doc="HTTP listeners: serve Prometheus metrics at /metrics."),
        conf("metricsMaxAddresses", INTEGER, default=100, maximum=INT32_MAX,
             doc="HTTP listeners: at most this many mobile addresses get per-address series in "
                 "/metrics (the busiest ones); -1 for no bound."),
        conf("websockets", BOOLEAN, default=True,
             doc="HTTP listeners: accept AMQP over WebSocket."),
        conf("http", BOOLEAN, default=False,
             doc="Speak HTTP (and AMQP over WebSocket) instead of plain AMQP."),
        conf("httpRootDir", PATH, deprecated=("httpRoot",),
             doc="Directory of static files served by an HTTP listener."),
    ],
    operations=("CREATE", "DELETE"),
    doc="Accepts incoming connections on a host and port.",
)

CONNECTOR = entity(
    "connector",
    [
        conf("host", default="127.0.0.1", doc="Host name or IP literal to connect to."),
        *_connection_settings("connector"),
        one_of("protocolFamily", *ADDRESS_FAMILIES,
               doc="Force IPv4 or IPv6; unset chooses from the address."),
        conf("allowRedirect", BOOLEAN, default=True,
             doc="Follow a redirect sent by the peer when it refuses the connection."),
        conf("verifyHostname", BOOLEAN, default=True, deprecated=("verifyHostName",),
             doc="With TLS, check that the peer's certificate matches the host connected to."),
        conf("saslUsername", doc="User name to authenticate as."),
        conf("saslPassword",
             doc="Password to authenticate with: the password itself, 'env:VAR' or 'file:PATH'."),
        status("failoverUrls", deprecated=("failoverList",),
               doc="Comma-separated failover URLs the peer offered."),
        status("connectionStatus", doc="CONNECTING, SUCCESS or FAILED."),
        status("connectionMsg", doc="Message describing the last connection attempt."),
    ],
    operations=("CREATE", "DELETE"),
    doc="Makes, and keeps re-making, an outgoing connection to a host and port.",
)

# update=True: what a management UPDATE of an sslProfile may change (qdmesh; qdrouterd 1.19
# refuses the UPDATE): docs/security.md, "Live TLS".
SSL_PROFILE = entity(
    "sslProfile",
    [
        conf("ciphers", update=True, doc="Allowed cipher suites, in OpenSSL cipher list format."),
        conf("protocols", update=True,
             doc="Space-separated TLS protocol versions to allow, e.g. 'TLSv1.2 TLSv1.3'."),
        conf("caCertFile", PATH, deprecated=("certDb",), update=True,
             doc="PEM file of the certificate authorities to trust."),
        conf("certFile", PATH, update=True, doc="PEM file of this end's certificate."),
        conf("privateKeyFile", PATH, deprecated=("keyFile",), update=True,
             doc="PEM file of the private key for certFile."),
        conf("passwordFile", PATH, update=True,
             doc="Deprecated: file holding the private key's password."),
        conf("password", update=True,
             doc="Private key password: the password itself, 'env:VAR', 'file:PATH' or 'literal:TEXT'."),
        conf("uidFormat",
             doc="Which client certificate fields make up a user's id, e.g. 'cou' for country, "
                 "organization and organizational unit."),
        conf("uidNameMappingFile", deprecated=("displayNameFile",),
             doc="JSON file mapping certificate-derived ids to user names."),
        conf("ordinal", INTEGER, minimum=0, maximum=INT32_MAX, update=True,
             doc="qdmesh: revision of the profile's material (unset: 0). An UPDATE re-reads the files and "
                 "new connections use them; an UPDATE without ordinal adds one to it, a lower "
                 "one is refused."),
        conf("oldestValidOrdinal", INTEGER, minimum=0, maximum=INT32_MAX, update=True,
             doc="qdmesh: connections made with a lower ordinal are replaced (unset: 0; the router's own, "
                 "make-before-break) or closed (clients', which reconnect)."),
        status("certificateSha256",
               doc="qdmesh: hex SHA-256 of the DER of the leaf certificate loaded now; empty if none."),
        status("certificateNotAfter",
               doc="qdmesh: expiry of the leaf certificate loaded now, ISO 8601 UTC."),
        status("caCertificateSha256",
               doc="qdmesh: hex SHA-256 of the bytes of the CA file loaded now; empty if none."),
    ],
    operations=("CREATE", "UPDATE", "DELETE"),
    doc="A named set of TLS settings that listeners and connectors refer to.",
)

AUTH_SERVICE_PLUGIN = entity(
    "authServicePlugin",
    [
        conf("authService", doc="Deprecated: use host and port."),
        conf("host", default="", doc="Host of the authentication service."),
        conf("port", default="amqp", doc="Port of the authentication service."),
        conf("realm", deprecated=("saslInitHostname",),
             doc="Hostname sent in sasl-init to the authentication service."),
        conf("sslProfile", deprecated=("authSslProfile",),
             doc="sslProfile used for the connection to the authentication service."),
    ],
    operations=("CREATE", "DELETE"),
    doc="Experimental: delegates SASL authentication to a remote service.",
)

TYPES = (LISTENER, CONNECTOR, SSL_PROFILE, AUTH_SERVICE_PLUGIN)
