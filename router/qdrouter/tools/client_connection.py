"""The proton pieces under every management client's connection: a Container without the
SSL domains it does not use, and a close that does not wait on a peer that stopped answering."""

from __future__ import annotations

from proton import Endpoint
from proton._reactor import GlobalOverrides
from proton.reactor import Container
from proton.utils import BlockingConnection


def stop_waiting_for_peer(conn: BlockingConnection) -> None:
    """Send our close and give the peer ``conn.timeout`` to answer, then stop reading from it.
    proton's own ``BlockingConnection.close()`` stops reading only once the peer has answered,
    and otherwise runs its event loop until the socket closes: against a router that is
    frozen (stopped, hung, its host unreachable) that was for as long as the router stayed
    frozen, holding up every caller, such as an operator that discards a client that timed
    out."""
    raw = conn.conn
    if raw is None:
        return
    answered = False
    try:
        raw.close()
        conn.wait(lambda: not (raw.state & Endpoint.REMOTE_ACTIVE), msg="Closing connection")
        answered = True
    except Exception:  # no answer in time (or the peer is gone): stop reading anyway
        pass
    transport = raw.transport
    if transport is not None:
        transport.close_tail()
        if not answered:
            # Over TLS the output side waits for the peer's half of the TLS shutdown too.
            transport.close_head()


class ClientContainer(Container):
    """A Container without the two default SSL domains proton makes for every Container (an
    OpenSSL context each, about 0.8 MiB of native memory apiece, whether TLS is used or not):
    this client passes its own domain whenever it speaks TLS.  A process holding a connection
    per router (the operator) would otherwise pay 1.6 MiB per router for nothing."""

    def __init__(self, container_id: str) -> None:
        # ``impl`` makes Container.__init__ skip its defaults; the ones a client needs follow.
        super().__init__(impl=None)
        self.ssl = None  # type: ignore[assignment]
        self.global_handler = GlobalOverrides(self.global_handler)  # type: ignore[arg-type]
        self.trigger = None
        self.container_id = container_id
        self.allow_insecure_mechs = True
        self.allowed_mechs = None
        self.sasl_enabled = True
        self.user = None
        self.password = None
