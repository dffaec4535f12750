"""The event loop's selector: the standard library's, waited on more cheaply (issue 31).

Sockets are registered, modified and unregistered through ``selectors`` as before (the HTTP
server shares the selector). Only the wait differs: ``EpollSelector.select`` makes a
SelectorKey tuple per ready socket, rounds the timeout with ``math.ceil`` and goes through
two more Python calls; at a fixed rate of messages, where most loop turns carry one message,
that was 4 µs of a turn on the benchmark host (against 2 µs for ``epoll.poll`` itself).
``Poller.poll`` returns epoll's own list: (fd, epoll event bits). Elsewhere than Linux (no
epoll) it asks the selector and gives its masks in the same bits.
"""

from __future__ import annotations

import select
import selectors
from typing import Any, Callable, List, Tuple

# epoll's bits; the selectors constants differ (EVENT_WRITE is 2, EPOLLOUT 4).
POLL_IN = getattr(select, "EPOLLIN", 1)
POLL_OUT = getattr(select, "EPOLLOUT", 4)
# As selectors reads them: any bit but EPOLLOUT (EPOLLIN, EPOLLERR, EPOLLHUP) makes a socket
# readable, any but EPOLLIN writable; each within what the socket is registered for.
READABLE = ~POLL_OUT
WRITABLE = ~POLL_IN


def selector_mask(event: int) -> int:
    """epoll's bits as a selectors mask (before limiting it to the registered events)."""
    readable = selectors.EVENT_READ if event & READABLE else 0
    return readable | (selectors.EVENT_WRITE if event & WRITABLE else 0)


def make_selector() -> Tuple[selectors.BaseSelector, Callable[[float], List[Tuple[int, int]]]]:
    """The selector to register sockets with, and the function the loop waits with."""
    selector = selectors.DefaultSelector()
    # EpollSelector's epoll object (an attribute of its own since Python 3.4); if it is not
    # there, the wait goes through select().
    is_epoll = isinstance(selector, selectors.EpollSelector)
    epoll: Any = getattr(selector, "_selector", None) if is_epoll else None
    if epoll is not None and hasattr(epoll, "poll"):
        poll = epoll.poll

        def wait(timeout: float) -> List[Tuple[int, int]]:
            # Whole milliseconds, rounded up as selectors does (epoll counts milliseconds: a
            # timeout rounded down would wake before the deadline and spin).
            if timeout > 0:
                timeout = -(-timeout // 0.001) * 0.001
            result: List[Tuple[int, int]] = poll(timeout)
            return result

        return selector, wait

    def wait_selector(timeout: float) -> List[Tuple[int, int]]:
        return [(key.fd, (POLL_IN if mask & selectors.EVENT_READ else 0)
                 | (POLL_OUT if mask & selectors.EVENT_WRITE else 0))
                for key, mask in selector.select(timeout)]

    return selector, wait_selector
