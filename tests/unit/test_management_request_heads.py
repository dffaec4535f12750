"""A management request larger than the agent's limit reaches it as its head only (the router
keeps no more: amqp/data_path/whole_reads.py). The agent must still answer it 413 at its reply-to,
wherever the head was cut."""

from __future__ import annotations

import pytest

from qdrouter.amqp import codec
from qdrouter.management.messages import MAX_REQUEST_BYTES, UndecodableRequest, check_request, decode_request
from qdrouter.management.status import ManagementStatus


def request(reply_to: str | None) -> bytes:
    return codec.encode_message(codec.Message(
        properties=codec.Properties(reply_to=reply_to, correlation_id="c-1"),
        application_properties={"operation": "QUERY", "type": "org.amqp.management", "name": "self",
                                 "padding": "p" * 5000},
        body={"attributeNames": ["x" * 1000] * 2000}))


@pytest.mark.parametrize("cut", [300, 3000, 64 * 1024], ids=["in-app-properties", "in-app-properties-late",
                                                                "in-body"])
def test_a_head_cut_anywhere_after_the_properties_is_answered_413(cut: int) -> None:
    whole = request("reply-here")
    assert len(whole) > MAX_REQUEST_BYTES
    found = decode_request(whole[:cut], full_size=len(whole))
    assert found.reply_to == "reply-here" and found.correlation_id == "c-1"
    with pytest.raises(ManagementStatus) as refused:
        check_request(found)
    assert refused.value.code == 413
    description = refused.value.description
    assert str(len(whole)) in description and str(MAX_REQUEST_BYTES) in description


def test_a_head_without_a_reply_to_is_rejected() -> None:
    whole = request(None)
    with pytest.raises(UndecodableRequest):
        decode_request(whole[:3000], full_size=len(whole))
