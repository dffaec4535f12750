"""A scripted AMQP management peer for client tests that need replies the real agent never gives.

It listens on a loopback port in a background thread, grants dynamic reply addresses, records
every request, and answers with whatever the test's ``responder`` returns (None: no reply).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional

from proton import Message
from proton.handlers import MessagingHandler, Reject
from proton.reactor import ApplicationEvent, Container, EventInjector

from tests.ports import free_port

Responder = Callable[[Message], Optional[Message]]

#: A responder returning this rejects the request instead of answering it.
REJECT = Message(subject="reject")


def reply(status: int, description: str = "", body: Any = None) -> Message:
    return Message(properties={"statusCode": status, "statusDescription": description}, body=body)


class _Handler(MessagingHandler):
    def __init__(self, agent: FakeAgent) -> None:
        super().__init__(auto_accept=True)
        self.agent = agent
        self.senders: Dict[str, Any] = {}
        self.acceptor: Any = None

    def on_start(self, event: Any) -> None:
        event.container.selectable(self.agent.injector)
        self.acceptor = event.container.listen(f"127.0.0.1:{self.agent.port}")
        self.agent.ready.set()

    def on_link_opening(self, event: Any) -> None:
        link = event.link
        if link.is_sender and link.remote_source.dynamic:
            address = f"reply-{len(self.senders)}"
            link.source.address = address
            self.senders[address] = link
        elif link.is_receiver:
            link.target.address = link.remote_target.address

    def on_message(self, event: Any) -> None:
        request = event.message
        self.agent.requests.append(request)
        answer = self.agent.responder(request)
        if answer is None:
            return
        if answer is REJECT:
            raise Reject()
        answer.correlation_id = request.correlation_id
        self.senders[request.reply_to].send(answer)

    def on_stop_agent(self, event: Any) -> None:
        self.acceptor.close()
        for link in self.senders.values():
            link.connection.close()
        self.agent.container.stop()


class FakeAgent:
    def __init__(self, responder: Responder) -> None:
        self.port = free_port()
        self.responder = responder
        self.requests: List[Message] = []
        self.ready = threading.Event()
        self.injector = EventInjector()
        self.container = Container(_Handler(self))
        self.thread = threading.Thread(target=self.container.run, daemon=True)

    @property
    def url(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> FakeAgent:
        self.thread.start()
        assert self.ready.wait(5), "fake agent did not start"
        return self

    def stop(self) -> None:
        self.injector.trigger(ApplicationEvent("stop_agent"))
        self.thread.join(5)
