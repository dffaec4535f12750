"""Message annotations and content integrity across the router."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import pytest
from proton import Data, Message, symbol, ulong

from .amqpclient import ACCEPTED, Net, msg, send_and_settle
from .routerproc import Router, RouterFactory

# AMQP 1.0 section descriptors (section 3.2)
HEADER, DELIVERY_ANN, MESSAGE_ANN, PROPERTIES, APP_PROPS = 0x70, 0x71, 0x72, 0x73, 0x74
BARE_SECTIONS = {0x73, 0x74, 0x75, 0x76, 0x77}  # properties, app-properties, body (data/seq/value)


def sections(raw: bytes) -> List[Tuple[int, bytes]]:
    """Split an encoded message into (descriptor code, encoded bytes) per section."""
    out = []
    rest = raw
    while rest:
        d = Data()
        used = d.decode(rest)
        assert used > 0, "undecodable section"
        d.rewind()
        d.next()
        d.enter()
        d.next()
        code = int(d.get_object())
        out.append((code, rest[:used]))
        rest = rest[used:]
    return out


def bare_message(raw: bytes) -> bytes:
    return b"".join(b for code, b in sections(raw) if code in BARE_SECTIONS)


def qd_keys(annotations: Dict[Any, Any] | None) -> List[str]:
    return [str(k) for k in (annotations or {}) if str(k).startswith("x-opt-qd.")]


def _rich_message(to: str) -> Message:
    return Message(
        address=to,
        id="msg-1",
        subject="integrity",
        reply_to="somewhere",
        correlation_id=ulong(42),
        content_type="application/octet-stream",
        properties={"str": "vălue", "int": -7, "float": 1.5, "bin": b"\x00\xff", "none": None},
        annotations={symbol("x-opt-app.tenant"): "acme", symbol("x-opt-qd.trace"): ["0/Elsewhere"],
                     symbol("x-opt-qd.custom"): "strip me"},
        body=bytes(range(256)) * 64,
    )


def test_body_and_properties_byte_identical(router: Router, net: Net) -> None:
    rcv = net.connect(router.url).receiver("ann.integrity")
    snd = net.connect(router.url).sender("ann.integrity")
    sent = _rich_message("ann.integrity")
    sent_raw = sent.encode()
    snd.send_raw(sent_raw)
    net.wait(lambda: len(rcv.received) == 1, 10, "the message")
    got = rcv.received[0]
    assert bare_message(got.raw) == bare_message(sent_raw), "bare message altered in transit"
    assert got.message.body == sent.body
    assert got.message.properties == sent.properties
    assert got.message.id == "msg-1" and got.message.correlation_id == 42
    assert got.message.reply_to == "somewhere" and got.message.subject == "integrity"


def test_qd_annotations_stripped_others_kept(router: Router, net: Net) -> None:
    """Default listener (stripAnnotations: both): no x-opt-qd.* reaches a normal client."""
    rcv = net.connect(router.url).receiver("ann.strip")
    snd = net.connect(router.url).sender("ann.strip")
    send_and_settle(net, snd, [_rich_message("ann.strip")])
    ann = rcv.received[0].message.annotations or {}
    assert qd_keys(ann) == [], f"router annotations leaked to the client: {ann}"
    assert ann.get(symbol("x-opt-app.tenant")) == "acme", f"application annotation lost: {ann}"


@pytest.mark.differs_from_c("qdrouterd drops the application annotations that follow a router annotation "
                             "in the map (its parser expects router annotations last); qdmesh keeps them")
def test_to_override_not_delivered_to_client(router: Router, net: Net) -> None:
    # A client's x-opt-qd.to on a listener that strips annotations routes nothing (see
    # test_basic_routing) and is stripped with the rest.
    rcv = net.connect(router.url).receiver("ann.other")
    snd = net.connect(router.url).sender(None)
    m = msg("x", to="ann.other", annotations={symbol("x-opt-qd.to"): "ann.target", symbol("keep"): 1})
    assert send_and_settle(net, snd, [m])[0].state == ACCEPTED
    ann = rcv.received[0].message.annotations or {}
    assert qd_keys(ann) == []
    assert ann.get(symbol("keep")) == 1
    assert rcv.received[0].message.address == "ann.other", "'to' must be delivered unchanged"


def test_message_without_annotations_gets_none_added(router: Router, net: Net) -> None:
    rcv = net.connect(router.url).receiver("ann.none")
    snd = net.connect(router.url).sender("ann.none")
    send_and_settle(net, snd, [msg("plain")])
    assert qd_keys(rcv.received[0].message.annotations) == []


def _no_strip_router(router_factory: RouterFactory) -> Router:
    return router_factory(router_id="Ingress.R", extra_listeners={"raw": {"stripAnnotations": "no"}})


def _router_id_forms(router: Router) -> set:
    return {router.router_id, f"0/{router.router_id}"}


def test_ingress_annotation_added_when_not_stripped(router_factory: RouterFactory, net: Net) -> None:
    """On a stripAnnotations: no listener the receiver sees x-opt-qd.ingress = the router's id
    (accepted as 'ID' or qdrouterd's '0/ID' form)."""
    router = _no_strip_router(router_factory)
    url = router.urls["raw"]
    rcv = net.connect(url).receiver("ann.ingress")
    snd = net.connect(url).sender("ann.ingress")
    send_and_settle(net, snd, [msg("where from?")])
    ann = rcv.received[0].message.annotations or {}
    assert ann.get(symbol("x-opt-qd.ingress")) in _router_id_forms(router), ann


def test_trace_appended_and_existing_ingress_kept(router_factory: RouterFactory, net: Net) -> None:
    router = _no_strip_router(router_factory)
    url = router.urls["raw"]
    rcv = net.connect(url).receiver("ann.trace")
    snd = net.connect(url).sender("ann.trace")
    m = msg("traced", annotations={symbol("x-opt-qd.trace"): ["0/Upstream"],
                                   symbol("x-opt-qd.ingress"): "0/Upstream"})
    send_and_settle(net, snd, [m])
    ann = rcv.received[0].message.annotations or {}
    trace = ann.get(symbol("x-opt-qd.trace"))
    assert isinstance(trace, list) and len(trace) == 2 and trace[0] == "0/Upstream", ann
    assert trace[1] in _router_id_forms(router), ann
    assert ann.get(symbol("x-opt-qd.ingress")) == "0/Upstream", "an existing ingress must be left unaltered"


def test_strip_default_listener_strips_on_ingress_too(router_factory: RouterFactory, net: Net) -> None:
    """A sender on a stripping listener cannot forge trace/ingress seen by a no-strip receiver."""
    router = _no_strip_router(router_factory)
    rcv = net.connect(router.urls["raw"]).receiver("ann.forge")
    snd = net.connect(router.url).sender("ann.forge")
    m = msg("forged", annotations={symbol("x-opt-qd.trace"): ["0/Fake"],
                                   symbol("x-opt-qd.ingress"): "0/Fake"})
    send_and_settle(net, snd, [m])
    ann = rcv.received[0].message.annotations or {}
    assert ann.get(symbol("x-opt-qd.ingress")) in _router_id_forms(router), ann
    assert "0/Fake" not in (ann.get(symbol("x-opt-qd.trace")) or []), ann


def test_large_multi_frame_message_byte_identical(router: Router, net: Net) -> None:
    """A 1 MiB message spans many transfer frames; it must arrive whole and unaltered."""
    rcv = net.connect(router.url).receiver("ann.large")
    snd = net.connect(router.url).sender("ann.large")
    body = bytes((i * 7919) % 251 for i in range(1 << 20))
    raw = Message(body=body, properties={"size": len(body)}).encode()
    tag = snd.send_raw(raw)
    net.wait(lambda: tag in snd.outcomes, 20, "the large message's outcome")
    assert snd.outcomes[tag].state == ACCEPTED
    assert bare_message(rcv.received[0].raw) == bare_message(raw)


def test_router_annotations_after_a_header_are_stripped(router: Router, net: Net) -> None:
    """A header section before the message annotations (a durable, prioritised message) does
    not hide the annotations from the router: its x-opt-qd.* entries are removed on the way
    in, the header and the application's annotations arrive intact."""
    rcv = net.connect(router.url).receiver("ann.header")
    snd = net.connect(router.url).sender("ann.header")
    sent = Message(address="ann.header", durable=True, priority=7, body="with header",
                   annotations={symbol("x-opt-app.k"): "v", symbol("x-opt-qd.trace"): ["0/Elsewhere"],
                                symbol("x-opt-qd.custom"): "strip me"})
    assert sections(sent.encode())[0][0] == HEADER, "the test message must start with a header"
    assert send_and_settle(net, snd, [sent])[0].state == ACCEPTED
    got = rcv.received[0].message
    assert qd_keys(got.annotations) == [], f"router annotations leaked: {got.annotations}"
    assert (got.annotations or {}).get(symbol("x-opt-app.k")) == "v"
    assert got.durable is True and got.priority == 7, "the header must arrive intact"


@pytest.mark.differs_from_c("qdrouterd strips only the x-opt-qd keys it knows (to, trace, ingress, phase, "
                             "class, stream: parse.c) and passes any other x-opt-qd.* key on as the "
                             "application's; qdmesh treats the whole x-opt-qd. namespace as the router's")
def test_unknown_router_annotation_alone_is_stripped(router: Router, net: Net) -> None:
    """An x-opt-qd.* key the router does not use, and nothing else, is still stripped on the
    way in: the namespace is the router's."""
    rcv = net.connect(router.url).receiver("ann.custom")
    snd = net.connect(router.url).sender("ann.custom")
    sent = msg("custom", annotations={symbol("x-opt-qd.custom"): "strip me"})
    assert send_and_settle(net, snd, [sent])[0].state == ACCEPTED
    assert qd_keys(rcv.received[0].message.annotations) == []


def test_annotation_text_in_a_body_is_just_data(router: Router, net: Net) -> None:
    """Without a message-annotations section, bytes that read like a router annotation in
    the body are the application's: the message arrives byte for byte."""
    rcv = net.connect(router.url).receiver("ann.body-text")
    snd = net.connect(router.url).sender("ann.body-text")
    for sent in (Message(address="ann.body-text", body=b"x-opt-qd.to=elsewhere"),
                 Message(address="ann.body-text", durable=True, body=b"x-opt-qd.trace")):
        raw = sent.encode()
        assert MESSAGE_ANN not in [code for code, _ in sections(raw)]
        snd.send_raw(raw)
    net.wait(lambda: len(rcv.received) == 2, 10, "both messages")
    assert [r.message.body for r in rcv.received] == [b"x-opt-qd.to=elsewhere", b"x-opt-qd.trace"]
    assert rcv.received[1].message.durable is True
