"""A sender that asks for a dynamic target gets an address of its own, as qdrouterd gives it: a
mobile address (``amqp:/_$temp.<id>``) named in the attach, that receivers may attach to."""

from __future__ import annotations

from proton import Link
from proton.reactor import LinkOption

from .amqpclient import ACCEPTED, Net, SenderLink, msg, send_and_settle
from .routerproc import Router


class DynamicTarget(LinkOption):
    def apply(self, link: Link) -> None:
        link.target.dynamic = True


def test_dynamic_target_gets_a_mobile_address_that_receivers_can_use(router: Router, net: Net) -> None:
    client = net.connect(router.url)
    link = net.container.create_sender(client.conn, None, name="dynamic-target", options=DynamicTarget())
    sender = SenderLink(client, link)
    client.links["dynamic-target"] = sender
    net.wait(lambda: sender.remote_opened or sender.remote_closed, 10, "the dynamic target's attach")
    assert sender.remote_opened and not sender.remote_closed
    address = link.remote_target.address
    assert address is not None and address.startswith("amqp:/_$temp."), address
    receiver = net.connect(router.url).receiver(address)
    assert [o.state for o in send_and_settle(net, sender, [msg("to my own address")])] == [ACCEPTED]
    net.wait(lambda: receiver.bodies() == ["to my own address"], 10, "the message at the receiver")
