"""Reading a router's HTTP pages in tests: raw HTTP over a socket, and /metrics parsed twice,
by prometheus_client's parser and by a strict line check of the text format."""

from __future__ import annotations

import re
import socket
import urllib.error
import urllib.request
from typing import Dict, Tuple

from prometheus_client.parser import text_string_to_metric_families

Sample = Tuple[str, Tuple[Tuple[str, str], ...]]
_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE_LINE = re.compile(rf'^({_NAME})(\{{({_NAME}="(?:[^"\\]|\\.)*")(,{_NAME}="(?:[^"\\]|\\.)*")*\}})? '
                          r"(-?[0-9.e+]+|NaN|[+-]Inf)$")


def get(port: int, path: str, timeout: float = 5.0) -> Tuple[int, str, Dict[str, str]]:
    """(status, body, headers) of GET http://127.0.0.1:PORT/PATH."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as reply:
            return reply.status, reply.read().decode(), dict(reply.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(), dict(error.headers)


def raw_exchange(port: int, data: bytes, timeout: float = 5.0) -> bytes:
    """Send ``data`` as is and read until the router closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def check_strict(text: str) -> None:
    """Every sample line is well formed and belongs to a family announced by HELP and TYPE
    just before it; counters end in _total; no family appears twice."""
    seen = set()
    current = None
    kinds: Dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            assert name not in seen, f"line {number}: family {name} announced twice"
            seen.add(name)
            current = name
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert name == current, f"line {number}: TYPE for {name} after HELP for {current}"
            assert kind in ("counter", "gauge", "histogram"), f"line {number}: type {kind}"
            assert kind != "counter" or name.endswith("_total"), f"line {number}: counter {name} lacks _total"
            kinds[name] = kind
        else:
            match = _SAMPLE_LINE.match(line)
            assert match, f"line {number} is not a sample: {line!r}"
            names = {current} if kinds.get(str(current)) != "histogram" else {
                f"{current}_bucket", f"{current}_sum", f"{current}_count"}
            assert match.group(1) in names, f"line {number}: sample of {match.group(1)} under {current}"
            assert 'router="' in line, f"line {number}: sample without a router label"
    assert text.endswith("\n")


def scrape(port: int) -> Dict[Sample, float]:
    """{(sample name, sorted labels without router): value} of /metrics, checked strictly."""
    status, text, headers = get(port, "/metrics")
    assert status == 200, text
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    check_strict(text)
    samples: Dict[Sample, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "router"))
            assert (sample.name, labels) not in samples, f"duplicate series {sample.name}{labels}"
            samples[(sample.name, labels)] = sample.value
    return samples


def value(samples: Dict[Sample, float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def router_info(samples: Dict[Sample, float]) -> Dict[str, str]:
    """The labels of qdmesh_router_info."""
    infos = [dict(labels) for name, labels in samples if name == "qdmesh_router_info"]
    assert len(infos) == 1, infos
    return infos[0]


def interpreter(samples: Dict[Sample, float]) -> str:
    """The ``python`` label of qdmesh_router_info: which interpreter runs the router."""
    return router_info(samples)["python"]
