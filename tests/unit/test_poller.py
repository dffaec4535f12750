"""The event loop's wait (qdrouter/amqp/poller.py, issue 31): epoll's own list, read as
selectors reads it."""

from __future__ import annotations

import select
import selectors
import socket
import time

from qdrouter.amqp.poller import POLL_IN, POLL_OUT, READABLE, WRITABLE, make_selector, selector_mask


def test_masks_read_as_selectors_reads_them() -> None:
    assert selector_mask(POLL_IN) == selectors.EVENT_READ
    assert selector_mask(POLL_OUT) == selectors.EVENT_WRITE
    hangup = getattr(select, "EPOLLHUP", 16)
    assert selector_mask(hangup) == selectors.EVENT_READ | selectors.EVENT_WRITE
    assert POLL_IN & READABLE and not POLL_IN & WRITABLE
    assert POLL_OUT & WRITABLE and not POLL_OUT & READABLE


def test_wait_gives_ready_sockets_by_fd_with_epoll_bits() -> None:
    selector, wait = make_selector()
    left, right = socket.socketpair()
    try:
        selector.register(left, selectors.EVENT_READ)
        assert wait(0) == []
        right.send(b"x")
        ready = wait(1.0)
        assert [(fd, bool(event & READABLE), bool(event & POLL_OUT)) for fd, event in ready] == [
            (left.fileno(), True, False)]
        selector.modify(left, selectors.EVENT_READ | selectors.EVENT_WRITE)
        ((fd, event),) = wait(1.0)
        assert fd == left.fileno() and event & READABLE and event & WRITABLE
        selector.unregister(left)
        assert wait(0) == []
    finally:
        selector.close()
        left.close()
        right.close()


def test_wait_rounds_a_short_timeout_up_rather_than_spinning() -> None:
    selector, wait = make_selector()
    try:
        start = time.monotonic()
        assert wait(0.0004) == []
        assert time.monotonic() - start >= 0.0004
    finally:
        selector.close()
