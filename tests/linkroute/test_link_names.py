"""Two clients may give their routed links the same name: the router passes both on over its
one connection to the container, under names that differ there (NAME@CONTAINER-ID for the
second, as qdrouterd names routed links), and the connection stays up for both."""

from __future__ import annotations

import pytest

from tests.router.amqpclient import ACCEPTED, Client, Net, ReceiverLink, msg
from tests.router.routerproc import Router


def named_receiver(client: Client, address: str, name: str) -> ReceiverLink:
    link = client.net.container.create_receiver(client.conn, address, name=name)
    wrapper = ReceiverLink(client, link, refill=True, settle=ACCEPTED)
    client.links[name] = wrapper
    link.flow(10)
    client.net.wait(lambda: wrapper.remote_opened or wrapper.remote_closed, 10, f"attach of {name}")
    return wrapper


@pytest.mark.c_router_bug("qdrouterd names each routed link NAME@CONTAINER-ID: two connections of one client "
                          "container (as here) attaching links of one name give the container two links of "
                          "one name, and it closes the connection ('Connectivity to the peer container was "
                          "lost' at the clients)")
def test_two_clients_routed_links_of_one_name_both_work(edge: Router, container: Router, net: Net) -> None:
    first = named_receiver(net.connect(edge.url), "lr.twins", "twin")
    second = named_receiver(net.connect(edge.url), "lr.twins", "twin")
    for receiver in (first, second):
        assert receiver.remote_opened and not receiver.remote_closed, receiver.remote_condition
    producer = net.connect(container.url).sender("lr.twins")
    for i in range(6):
        producer.send(msg(f"m{i}"))
    net.wait(lambda: len(first.received) + len(second.received) == 6, 20, "6 messages at the two clients")
    assert first.received and second.received, "both routed links carry messages"
    # The route to the container is still there for a third client.
    third = net.connect(edge.url).receiver("lr.after")
    assert third.remote_opened and not third.remote_closed, third.remote_condition
