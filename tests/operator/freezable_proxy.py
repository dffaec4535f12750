"""A TCP proxy on loopback that can stop forwarding without closing anything: the way an API
server looks to a client whose network path drops packets (iptables DROP) rather than
refusing them.  While frozen it accepts connections and reads nothing more from either side;
thawing cuts every connection that lived through the freeze (by then its client has given up
on it, as after a real outage) and forwards new ones again."""

from __future__ import annotations

import socket
import threading
import time
from typing import List


class _Link:
    def __init__(self, client: socket.socket) -> None:
        self.client = client
        self.upstream: socket.socket | None = None
        self.cut = False

    def close(self) -> None:
        self.cut = True
        for sock in (self.client, self.upstream):
            if sock is None:
                continue
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


class FreezableProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = int(self.listener.getsockname()[1])
        self._flowing = threading.Event()
        self._flowing.set()
        self._lock = threading.Lock()
        self._links: List[_Link] = []
        self._closed = False
        #: time.time() of every connection accepted.
        self.accepted: List[float] = []
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()

    def freeze(self) -> None:
        self._flowing.clear()

    def thaw(self) -> None:
        with self._lock:
            stale, self._links = self._links, []
        for link in stale:
            link.close()
        self._flowing.set()

    def close(self) -> None:
        self._closed = True
        self.listener.close()
        self.thaw()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.accepted.append(time.time())
            link = _Link(client)
            with self._lock:
                self._links.append(link)
            threading.Thread(target=self._open, args=(link,), name="proxy-link", daemon=True).start()

    def _open(self, link: _Link) -> None:
        self._flowing.wait()
        if link.cut:
            return
        try:
            link.upstream = socket.create_connection(self.target, timeout=10)
            link.upstream.settimeout(None)
        except OSError:
            link.close()
            return
        for src, dst in ((link.client, link.upstream), (link.upstream, link.client)):
            threading.Thread(target=self._pump, args=(link, src, dst), name="proxy-pump", daemon=True).start()

    def _pump(self, link: _Link, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                self._flowing.wait()
                if link.cut:
                    return
                data = src.recv(65536)
                if not data:
                    break
                self._flowing.wait()  # what arrived as the path went down stays here
                if link.cut:
                    return
                dst.sendall(data)
        except OSError:
            pass
        link.close()
