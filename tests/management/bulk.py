"""Thousands of addresses and links in seconds, and management requests too large for proton.

Receivers are spread over connections of PER_CONNECTION links each: proton-C finds a link
by name with a walk of its session's links on every attach, so one connection of 20,000
links costs both ends a quadratic walk (35 s here, against 4 s for 20 connections).
Requests and replies travel as raw bytes through the router's own codec: proton's decoder
holds at most 65,535 values a message, and these tests send and receive more.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from itertools import count
from pathlib import Path
from typing import Any, Dict, List

from proton import Delivery

from qdrouter.amqp import codec
from tests.router.amqpclient import Client, Net, ReceiverLink

PER_CONNECTION = 1000
REPO_ROUTER = Path(__file__).resolve().parents[2] / "router"
_ids = count(1)


def open_receivers(net: Net, url: str, total: int, prefix: str) -> List[ReceiverLink]:
    """``total`` receivers (no credit) on addresses prefix0 .. prefix<total-1>, all attached."""
    clients = [net.connect(url) for _ in range((total + PER_CONNECTION - 1) // PER_CONNECTION)]
    links = [clients[n % len(clients)].receiver(f"{prefix}{n}", credit=0, wait=False) for n in range(total)]
    # Each connection's attaches are answered in order: its last link open means all are.
    last = links[-len(clients):]
    net.wait(lambda: all(link.remote_opened or link.remote_closed for link in last), 120,
             f"{total} receivers to attach")
    refused = [link for link in links if not link.remote_opened or link.remote_closed]
    assert not refused, f"{len(refused)} of {total} receivers refused: {refused[0].remote_condition}"
    return links


def run_tool_pumping(net: Net, tool: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``python -m qdrouter.tools.TOOL`` while the test's own connections keep being
    served (their heartbeats keep the router from closing them as idle)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROUTER), env.get("PYTHONPATH", "")) if p)
    with subprocess.Popen([sys.executable, "-m", f"qdrouter.tools.{tool}", *args], env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        deadline = time.monotonic() + timeout
        out, err = "", ""
        while True:
            try:
                out, err = proc.communicate(timeout=0.05)
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    proc.kill()
                    raise
                net.process()
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


class RawReceiver(ReceiverLink):
    """A reply receiver that keeps each message's bytes undecoded."""

    def __init__(self, client: Client, link: Any) -> None:
        super().__init__(client, link, refill=True, settle=None)
        self.raws: List[bytes] = []

    def on_delivery(self, dlv: Delivery) -> None:
        if not dlv.readable or dlv.partial:
            return
        self.raws.append(self.link.recv(dlv.pending) or b"")
        self.link.advance()
        dlv.update(Delivery.ACCEPTED)
        dlv.settle()
        self.link.flow(1)


class RawManagement:
    """Requests encoded and replies decoded by qdrouter.amqp.codec, over one connection.

    ``anonymous``: requests go on a link with no target, addressed by their ``to``."""

    def __init__(self, net: Net, client: Client, anonymous: bool = False) -> None:
        self.net = net
        name = f"raw-replies-{next(_ids)}"
        link = net.container.create_receiver(client.conn, None, name=name, dynamic=True)
        self.replies = RawReceiver(client, link)
        self.seen = 0
        client.links[link.name] = self.replies
        link.flow(10)
        net.wait(lambda: self.replies.remote_opened and self.replies.address, 10, "the reply-to address")
        self.to = "$management" if anonymous else None
        self.sender = client.sender(None if anonymous else "$management")

    def request(self, properties: Dict[str, Any], body: Any, timeout: float = 30) -> codec.Message:
        correlation = f"raw-{next(_ids)}"
        raw = codec.encode_message(codec.Message(
            properties=codec.Properties(to=self.to, reply_to=self.replies.address,
                                        correlation_id=correlation),
            application_properties=properties, body=body))
        self.sender.send_raw(raw)
        found: List[codec.Message] = []

        def arrived() -> bool:
            while self.seen < len(self.replies.raws):
                message = codec.decode_message(self.replies.raws[self.seen])
                self.seen += 1
                if message.properties is not None and message.properties.correlation_id == correlation:
                    found.append(message)
                    return True
            return False

        self.net.wait(arrived, timeout, f"the reply to a {properties.get('operation')} request")
        return found[0]


def status(reply: codec.Message) -> int:
    return int((reply.application_properties or {})["statusCode"])
