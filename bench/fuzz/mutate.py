"""Seeded mutations for the million-case run: fast, deterministic per seed, no hypothesis."""

from __future__ import annotations

import json
import random
from typing import Any, List

TOKENS = ["{", "}", ":", ",", "\n", "#", "[", "]", '"', "*", "$default", "{user}", "-", "::", "0x7fffffff",
          "-1", "99999999999999999999", "true", "no", "groups", "vhost", "policy", "router", "listener",
          "sslProfile", "remoteHosts", "users", "sources", "targets", "maxConnections", "maxFrameSize",
          "\u00e9", "\x00", "\ud7ff", " " * 40, "{" * 50, "}" * 50, "[" * 50, "10.0.0.1-10.0.0.9", "*.*"]

JSON_KEYS = ["hostname", "id", "name", "groups", "users", "remoteHosts", "sources", "targets", "aliases",
             "maxConnections", "maxConnectionsPerUser", "maxConnectionsPerHost", "maxMessageSize",
             "maxFrameSize", "maxSessions", "maxSessionWindow", "maxSenders", "maxReceivers",
             "allowUnknownUser", "allowDynamicSource", "allowAnonymousSender", "allowUserIdProxy",
             "sourcePattern", "targetPattern", "$default", "bogus"]


def mutate_text(rng: random.Random, seed: str, edits: int) -> str:
    text = seed
    for _ in range(edits):
        position = rng.randrange(len(text) + 1)
        choice = rng.random()
        if choice < 0.35:
            text = text[:position] + rng.choice(TOKENS) + text[position:]
        elif choice < 0.6:
            text = text[:position] + text[position + rng.randrange(1, 20):]
        elif choice < 0.8:
            text = text[:position] + chr(rng.randrange(0, 0x3000)) + text[position + 1:]
        else:
            start = rng.randrange(len(text) + 1)
            text = text[:position] + text[start:start + rng.randrange(1, 80)] + text[position:]
    return text


def mutate_bytes(rng: random.Random, seed: bytes, edits: int) -> bytes:
    data = bytearray(seed)
    for _ in range(edits):
        position = rng.randrange(len(data) + 1)
        choice = rng.random()
        if choice < 0.4 and data:
            data[min(position, len(data) - 1)] = rng.randrange(256)
        elif choice < 0.6:
            del data[position:position + rng.randrange(1, 16)]
        elif choice < 0.8:
            data[position:position] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        else:
            # Sizes and counts are where decoders go wrong: write an extreme one.
            data[position:position] = rng.choice([b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\x7f",
                                                  b"\xd0\xff\xff\xff\xff", b"\xb0\x00\x10\x00\x00"])
    return bytes(data)


def random_json(rng: random.Random, depth: int = 0) -> Any:
    choice = rng.random()
    if depth > 4 or choice < 0.5:
        return rng.choice([None, True, False, 0, -1, 2 ** 31, 2 ** 70, 1.5, "", "*", "a,b", "{user}*",
                           "127.0.0.1", "::1-::2", "10.0.0.9-10.0.0.1", "host.example", "x" * 300,
                           rng.choice(JSON_KEYS), str(rng.randrange(100000))])
    if choice < 0.7:
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(JSON_KEYS) if rng.random() < 0.8 else str(rng.random()): random_json(rng, depth + 1)
            for _ in range(rng.randrange(6))}


def mutate_json(rng: random.Random, seed: Any) -> Any:
    value = json.loads(json.dumps(seed))
    for _ in range(rng.randrange(1, 5)):
        target = value
        path: List[Any] = []
        while isinstance(target, dict) and target and rng.random() < 0.7:
            key = rng.choice(list(target))
            path.append((target, key))
            target = target[key]
        if path:
            parent, key = path[-1]
            if rng.random() < 0.2:
                del parent[key]
            else:
                parent[key] = random_json(rng)
        elif isinstance(value, dict):
            value[rng.choice(JSON_KEYS)] = random_json(rng)
    return value
