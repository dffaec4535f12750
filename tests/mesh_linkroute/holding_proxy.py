"""A TCP proxy on loopback between two routers that can hold back what one side sends, while
the other side's bytes still flow: the way a router looks to a neighbour that has not yet read
what it was told (its link state, its withdrawn addresses). Released, the held bytes follow
in order; nothing is cut or lost."""

from __future__ import annotations

import socket
import threading
from typing import List


class HoldingProxy:
    """Forwards connections to ``127.0.0.1:target_port``; ``hold()`` stops passing on what the
    connecting side sends (it waits here), ``release()`` passes it on."""

    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = int(self.listener.getsockname()[1])
        self._flowing = threading.Event()
        self._flowing.set()
        self._sockets: List[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, name="holding-proxy", daemon=True).start()

    def hold(self) -> None:
        self._flowing.clear()

    def release(self) -> None:
        self._flowing.set()

    def close(self) -> None:
        self._closed = True
        self._flowing.set()
        for sock in [self.listener, *self._sockets]:
            try:
                sock.close()
            except OSError:
                pass

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                return
            upstream.settimeout(None)
            self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, holdable: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if holdable:
                    self._flowing.wait()
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
