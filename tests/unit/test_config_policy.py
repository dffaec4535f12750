"""Policy configuration: policy and vhost sections with nested user groups."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from qdrouter.config import ConfigEntity, parse_config_text

BOOK = Path("/work/shared/reference/qpid-dispatch-0.7-book.md")


def vhosts(text: str) -> list[ConfigEntity]:
    return [e for e in parse_config_text("router {\n}\n" + text, "policy.conf") if e.section == "vhost"]


def test_vhost_named_only_by_name_uses_it_as_hostname() -> None:
    [vhost] = vhosts("vhost {\n    name: $default\n    maxConnectionsPerUser: 10\n"
                     "    allowUnknownUser: true\n    groups: {\n        $default: {\n"
                     "            remoteHosts: *\n            sources: *\n            targets: *\n"
                     "        }\n    }\n}\n")
    assert vhost.attributes["name"] == "$default"
    assert vhost.attributes["hostname"] == "$default"
    assert vhost.attributes["maxConnectionsPerUser"] == 10
    assert vhost.attributes["maxConnections"] == 65535
    assert vhost.attributes["allowUnknownUser"] is True
    group = vhost.attributes["groups"]["$default"]  # type: ignore[index]
    assert (group["remoteHosts"], group["sources"], group["targets"]) == ("*", "*", "*")


def test_groups_with_users_limits_and_trailing_commas() -> None:
    [vhost] = vhosts("vhost {\n    hostname: shop.example\n    groups: {\n"
                     "        staff: {\n            users: ann, ben\n"
                     "            remoteHosts: 10.0.0.1, ::1\n            maxFrameSize: 8000\n"
                     "            maxSessions: 2\n            allowAnonymousSender: yes\n        },\n"
                     "        guests: {\n            remoteHosts: *\n"
                     "            sources: news*, {user}-inbox\n        }\n    }\n}\n")
    groups = vhost.attributes["groups"]
    assert isinstance(groups, dict)
    assert groups["staff"]["users"] == "ann, ben"
    assert groups["staff"]["remoteHosts"] == "10.0.0.1, ::1"
    assert groups["staff"]["maxFrameSize"] == 8000
    assert groups["staff"]["allowAnonymousSender"] is True
    assert groups["guests"]["sources"] == "news*, {user}-inbox"
    assert groups["guests"]["maxSenders"] == 2147483647


def test_policy_section_defaults() -> None:
    [policy] = [e for e in parse_config_text("router {}\npolicy {\n  maxConnections: 100\n}\n", "p")
                if e.section == "policy"]
    assert policy.attributes == {"maxConnections": 100, "maxMessageSize": 0,
                                 "enableVhostPolicy": False, "enableVhostNamePatterns": False,
                                 "policyDir": "", "defaultVhost": "$default"}


def _book_policy_examples() -> list[str]:
    """The config blocks of the book's 'Composing Policies' section, callout marks removed."""
    text = BOOK.read_text(encoding="utf-8")
    part = text[text.index("#### 2.6.5"):text.index("## 3. ")]
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in part.splitlines():
        if line.startswith("    ") or (current and not line.strip()):
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    blocks.append(current)
    examples = []
    for block in blocks:
        body = "\n".join(re.sub(r"\*\*<\s*\d+>\*\*", "", line) for line in block
                         if line.strip() != "...")  # '...' stands for lines left out
        if "{" in body:
            examples.append(body)
    return examples


@pytest.mark.skipif(not BOOK.exists(), reason="reference book not available")
def test_book_policy_examples_parse() -> None:
    examples = _book_policy_examples()
    assert len(examples) == 3
    parsed = [vhosts(example) for example in examples]
    assert [v[0].attributes["hostname"] for v in parsed] == ["$default", "example.com", "traders.com"]
    admin = parsed[1][0].attributes["groups"]["admin"]  # type: ignore[index]
    assert admin["users"] == "alice, bob"
    assert admin["remoteHosts"] == "127.0.0.1, ::1"
    feeds = parsed[2][0].attributes["groups"]["feeds"]  # type: ignore[index]
    assert (feeds["maxFrameSize"], feeds["maxSessionWindow"], feeds["maxSessions"]) == (60000, 20000, 3)
