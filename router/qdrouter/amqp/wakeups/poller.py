"""The event loop's readiness poller: selectors' interface, by file descriptor, without its
per-socket bookkeeping.

selectors.EpollSelector keeps a SelectorKey (a namedtuple) in a dict for every registered
socket, about 0.15 KB per connection (bench/README.md, "One router at scale"); epoll itself
already knows what each descriptor is registered for, and the server's connections remember
it too (AmqpConnection.interest). So on Linux this registers descriptors with epoll directly
and keeps nothing per descriptor. Elsewhere (no epoll) it wraps selectors.DefaultSelector.

select() gives (fd, mask) pairs with selectors' EVENT_READ / EVENT_WRITE masks, an error or
hang-up reported as both, as EpollSelector does. Registering a descriptor twice, or
modifying or unregistering one that is not registered (or already closed), raises KeyError,
as selectors does, so callers handle both kinds alike.
"""

from __future__ import annotations

import errno
import math
import select
import selectors
from typing import Any, List, Tuple

EVENT_READ = selectors.EVENT_READ
EVENT_WRITE = selectors.EVENT_WRITE


def _fd(fileobj: Any) -> int:
    return fileobj if isinstance(fileobj, int) else int(fileobj.fileno())


class Poller:
    """What the loop asks of a poller (make_poller() gives the one for this platform)."""

    def register(self, fileobj: Any, mask: int) -> None:
        raise NotImplementedError

    def modify(self, fileobj: Any, mask: int) -> None:
        raise NotImplementedError

    def unregister(self, fileobj: Any) -> None:
        raise NotImplementedError

    def select(self, timeout: float | None = None) -> List[Tuple[int, int]]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _EpollPoller(Poller):
    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._max_events = 1024

    @staticmethod
    def _events(mask: int) -> int:
        events = 0
        if mask & EVENT_READ:
            events |= select.EPOLLIN
        if mask & EVENT_WRITE:
            events |= select.EPOLLOUT
        return events

    def register(self, fileobj: Any, mask: int) -> None:
        try:
            self._epoll.register(_fd(fileobj), self._events(mask))
        except FileExistsError:
            raise KeyError(f"{fileobj!r} is already registered") from None

    def modify(self, fileobj: Any, mask: int) -> None:
        try:
            self._epoll.modify(_fd(fileobj), self._events(mask))
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.EBADF):
                raise KeyError(f"{fileobj!r} is not registered") from None
            raise

    def unregister(self, fileobj: Any) -> None:
        try:
            fd = _fd(fileobj)
        except ValueError:  # a closed socket object: epoll forgot it when it closed
            raise KeyError(f"{fileobj!r} is closed") from None
        try:
            self._epoll.unregister(fd)
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.EBADF):
                raise KeyError(f"{fileobj!r} is not registered") from None
            raise

    def select(self, timeout: float | None = None) -> List[Tuple[int, int]]:
        # As EpollSelector: epoll's timeout is in ms, rounded up so a short wait is not a spin.
        wait = -1.0 if timeout is None else (0.0 if timeout <= 0 else math.ceil(timeout * 1e3) * 1e-3)
        ready = []
        not_read, not_write = ~select.EPOLLIN, ~select.EPOLLOUT
        for fd, events in self._epoll.poll(wait, self._max_events):
            mask = 0
            if events & not_read:
                mask |= EVENT_WRITE
            if events & not_write:
                mask |= EVENT_READ
            ready.append((fd, mask))
        return ready

    def close(self) -> None:
        self._epoll.close()


class _SelectorPoller(Poller):
    """selectors.DefaultSelector behind the same (fd, mask) interface."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()

    def register(self, fileobj: Any, mask: int) -> None:
        self._selector.register(fileobj, mask)

    def modify(self, fileobj: Any, mask: int) -> None:
        self._selector.modify(fileobj, mask)

    def unregister(self, fileobj: Any) -> None:
        self._selector.unregister(fileobj)

    def select(self, timeout: float | None = None) -> List[Tuple[int, int]]:
        return [(key.fd, mask) for key, mask in self._selector.select(timeout)]

    def close(self) -> None:
        self._selector.close()


def make_poller() -> Poller:
    return _EpollPoller() if hasattr(select, "epoll") else _SelectorPoller()
