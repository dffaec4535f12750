"""A short fuzz run in CI (hypothesis): the config parser, the management request decoder and
the policy rule parser never crash or hang on hostile input, and every refusal is a clear
error. The million-case run is bench/fuzz/run_fuzz.py."""

from __future__ import annotations

import time
from typing import Any, Callable

import pytest
from proton import Message

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from bench.fuzz import targets  # noqa: E402
from bench.fuzz.mutate import JSON_KEYS, TOKENS  # noqa: E402

EXAMPLES = settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck),
                    derandomize=True)
SLOW_S = 1.0


def timed(check: Callable[[Any], int], value: Any) -> None:
    # CPU time, not wall time: a busy machine's waits for the CPU are not the parser's.
    started = time.process_time()
    check(value)
    elapsed = time.process_time() - started
    assert elapsed < SLOW_S, f"{elapsed:.2f} s for one input: {value!r:.200}"


@st.composite
def edited_text(draw: Any, seeds: list) -> str:
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 6))):
        position = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            insert = draw(st.one_of(st.sampled_from(TOKENS), st.text(max_size=12)))
            text = text[:position] + insert + text[position:]
        else:
            text = text[:position] + text[position + draw(st.integers(1, 20)):]
    return text


@st.composite
def edited_bytes(draw: Any, seeds: list) -> bytes:
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(data)))
        if draw(st.booleans()) and data:
            data[min(position, len(data) - 1)] = draw(st.integers(0, 255))
        else:
            data[position:position] = draw(st.binary(min_size=1, max_size=6))
    return bytes(data)


JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=30),
              st.sampled_from(["*", "{user}", "127.0.0.1", "::1", "10.0.0.1-10.0.0.9", "a,b,,c", "x*y"])),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.one_of(st.sampled_from(JSON_KEYS), st.text(max_size=8)),
                                               children, max_size=6)),
    max_leaves=20)

VHOST = st.fixed_dictionaries(
    {"hostname": st.one_of(st.text(max_size=10), st.just("v"))},
    optional={key: JSON for key in ("maxConnections", "maxConnectionsPerUser", "aliases", "allowUnknownUser")}
    | {"groups": st.dictionaries(st.text(max_size=6), st.dictionaries(st.sampled_from(JSON_KEYS), JSON,
                                                                       max_size=6), max_size=3)})


@EXAMPLES
@given(st.one_of(edited_text(targets.CONFIG_SEEDS), st.text(max_size=300)))
def test_config_parser(text: str) -> None:
    timed(targets.check_config, text)


@EXAMPLES
@given(st.one_of(edited_bytes(targets.management_seeds()), st.binary(max_size=300)))
def test_management_request_decoder(raw: bytes) -> None:
    timed(targets.check_management, raw)


@EXAMPLES
@given(st.one_of(VHOST, JSON))
def test_policy_rule_parser(vhost: Any) -> None:
    timed(targets.check_policy, vhost)


@EXAMPLES
@given(JSON, JSON)
def test_policy_host_and_address_rules(hosts: Any, addresses: Any) -> None:
    targets.check_rules(hosts, addresses)


def test_the_fuzz_targets_can_fail() -> None:
    """The checks do reject a crash: a target that raises something undocumented fails."""
    with pytest.raises(targets.FuzzFailure, match="ZeroDivisionError"):
        targets.check_policy({"hostname": "v", "groups": {"g": _Exploding()}})


class _Exploding(dict):
    def items(self) -> Any:  # type: ignore[override]
        raise ZeroDivisionError("boom")


def test_fuzz_findings_stay_fixed() -> None:
    """Inputs the million-case run found crashing, now refused with a clear error."""
    # str.isdigit() accepted the digit '❷', then int() raised ValueError out of the loader.
    assert targets.check_config("router {\n    id: R\n}\nlistener {\n    port: \u27775672\n}\n") == 0
    # Invalid UTF-8 in reply-to raised UnicodeDecodeError out of the management agent.
    raw = Message(body={}, properties={"operation": "QUERY"}, reply_to="amqp:/xy").encode()
    assert targets.check_management(bytes(raw).replace(b"amqp:/xy", b"amqp:/\xff\xfe")) == 0
