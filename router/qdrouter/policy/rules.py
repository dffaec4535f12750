"""The small languages inside policy attributes: lists (CSV or JSON lists), remote-host rules
and source/target address rules (book 2.6.4)."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any, Callable, FrozenSet, List, Sequence, Tuple, Union

from .errors import PolicyError

USER_TOKEN = "{user}"
IpAddress = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]


def parse_list(value: Any, field: str) -> List[str]:
    """A CSV string or a list of strings -> stripped, non-empty items."""
    if value is None:
        return []
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, (list, tuple)):
        items = []
        for item in value:
            if not isinstance(item, str):
                raise PolicyError(f"{field}: list items must be strings, got {item!r}")
            items.extend(item.split(","))
    else:
        raise PolicyError(f"{field}: expected a comma-separated string or a list of strings, got {value!r}")
    result = []
    for item in items:
        item = item.strip()
        if item:
            if any(not ch.isprintable() for ch in item):
                raise PolicyError(f"{field}: {item!r} contains unprintable characters")
            result.append(item)
    return result


# ---- remote hosts -----------------------------------------------------------------------
class HostRule:
    """One remoteHosts entry: '*', an address, an address range 'low-high', or a host name."""

    __slots__ = ("addresses", "high", "low", "name", "text", "wildcard")

    def __init__(self, text: str, field: str = "remoteHosts") -> None:
        self.text = text
        self.wildcard = text == "*"
        self.name: str | None = None
        self.low: IpAddress | None = None
        self.high: IpAddress | None = None
        # A host name's addresses, looked up when the vhost is defined (resolve_host_names).
        self.addresses: FrozenSet[IpAddress] = frozenset()
        if self.wildcard:
            return
        if "*" in text:
            raise PolicyError(f"{field}: {text!r}: '*' must stand alone")
        low_text, sep, high_text = text.partition("-")
        low = _address(low_text.strip())
        if sep and low is not None:
            high = _address(high_text.strip())
            if high is None:
                raise PolicyError(f"{field}: {text!r}: range end {high_text.strip()!r} is not an IP address")
            if high.version != low.version:
                raise PolicyError(f"{field}: {text!r}: range ends are of different IP versions")
            if int(high) < int(low):
                raise PolicyError(f"{field}: {text!r}: range start is above its end")
            self.low, self.high = low, high
            return
        if low is not None:
            self.low = self.high = low
            return
        if not _valid_host_name(text):
            raise PolicyError(f"{field}: {text!r} is not '*', an IP address, a range or a host name")
        self.name = text.lower()

    def matches(self, address: IpAddress) -> bool:
        if self.wildcard:
            return True
        if self.low is not None and self.high is not None:
            return self.low.version == address.version and int(self.low) <= int(address) <= int(self.high)
        return self.name is not None and address in self.addresses


def _address(text: str) -> IpAddress | None:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None


def _valid_host_name(text: str) -> bool:
    if not text or len(text) > 253:
        return False
    for label in text.rstrip(".").split("."):
        if not label or len(label) > 63 or label.startswith("-") or label.endswith("-"):
            return False
        if not all((ch.isalnum() and ch.isascii()) or ch in "-_" for ch in label):
            return False
    return True


def resolve(name: str) -> FrozenSet[IpAddress]:
    """Addresses a host name stands for (none if it does not resolve)."""
    try:
        infos = socket.getaddrinfo(name, None)
    except (OSError, UnicodeError):
        return frozenset()
    found = set()
    for info in infos:
        address = _address(str(info[4][0]))
        if address is not None:
            found.add(address)
    return frozenset(found)


def parse_hosts(value: Any, field: str = "remoteHosts") -> Tuple[HostRule, ...]:
    return tuple(HostRule(item, field) for item in parse_list(value, field))


Resolver = Callable[[str], FrozenSet[IpAddress]]


def resolve_host_names(rules: Sequence[HostRule], resolver: Resolver = resolve) -> None:
    """Look up the rules' host names now, so that checking a connection never waits for DNS
    (the router's event loop is single-threaded). A name that does not resolve matches nothing."""
    for rule in rules:
        if rule.name is not None:
            rule.addresses = resolver(rule.name)


def host_allowed(rules: Sequence[HostRule], remote: str) -> bool:
    """An empty rule list denies every host (book 2.6.3)."""
    if not rules:
        return False
    if any(rule.wildcard for rule in rules):
        return True
    address = _address(remote)
    if address is None:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        mapped: IpAddress = address.ipv4_mapped
        return any(rule.matches(address) or rule.matches(mapped) for rule in rules)
    return any(rule.matches(address) for rule in rules)


# ---- sources and targets ----------------------------------------------------------------
# qdrouterd 1.19's user substitution token; the 0.7 book's '{user}' is read too.
USER_SUBST = "${user}"
_SEPARATORS = "./"


def _user_token(text: str, field: str) -> str | None:
    """Which user token ``text`` uses (None: none). qdrouterd refuses an item with more than
    one '${user}'; the book's '{user}' is substituted once, leftmost, as it always was here."""
    count = text.count(USER_SUBST)
    if count > 1:
        raise PolicyError(f"{field}: {text!r} contains more than one {USER_SUBST} token")
    if count == 1:
        return USER_SUBST
    return USER_TOKEN if USER_TOKEN in text else None


class AddressRule:
    """One sources/targets entry, as qdrouterd matches it (policy.c
    _qd_policy_approve_link_name): '*' alone allows any non-empty address; '${user}' (or the
    book's '{user}') stands for the authenticated user, literally; the rule's trailing '*'
    matches any rest of the address."""

    __slots__ = ("prefix", "text", "token", "wildcard")

    def __init__(self, text: str, field: str = "sources") -> None:
        self.text = text
        self.token = _user_token(text, field)
        self.prefix = text.endswith("*")
        self.wildcard = text == "*"

    def matches(self, address: str, user: str) -> bool:
        if not address:
            return False  # qdrouterd: a blank address never matches, not even '*'
        if self.wildcard:
            return True
        text = self.text if self.token is None else self.text.replace(self.token, user, 1)
        # Only the rule's own trailing '*' is a wildcard: qdrouterd also reads one that a
        # user's name ends with as one, giving a user named 'x*' every address under 'x'.
        if self.prefix:
            return address.startswith(text[:-1])
        return address == text


def parse_addresses(value: Any, field: str) -> Tuple[AddressRule, ...]:
    return tuple(AddressRule(item, field) for item in parse_list(value, field))


def address_allowed(rules: Sequence[AddressRule], address: str, user: str) -> bool:
    """An empty rule list denies every address (book 2.6.3)."""
    return any(rule.matches(address, user) for rule in rules)


class AddressPattern:
    """sourcePattern/targetPattern: tokens split on '.' or '/', '*' one token, '#' any number.

    '${user}' may begin or end a pattern (qdrouterd refuses it elsewhere): the address must
    begin (end) with the user's name, whole, followed (preceded) by a separator or nothing,
    and the rest is matched with the name standing in for the token, as policy.c's
    _qd_policy_approve_link_name_tree does. So a user's name is never read as a pattern (a
    user named '#' gets no wildcard) and names with dots work. The book's '{user}' is
    accepted anywhere, and must equal the address's token(s) in its place literally."""

    __slots__ = ("legacy", "place", "text", "tokens")

    def __init__(self, text: str, field: str = "sourcePattern") -> None:
        self.text = text
        token = _user_token(text, field)
        self.place: str | None = None
        self.legacy = token == USER_TOKEN
        if token == USER_SUBST:
            if text.startswith(USER_SUBST):
                self.place = "prefix"
            elif text.endswith(USER_SUBST):
                self.place = "suffix"
            else:
                raise PolicyError(f"{field}: {text!r}: {USER_SUBST} may only begin or end a pattern")
        self.tokens = _tokens(text)

    def matches(self, address: str, user: str) -> bool:
        if not address:
            return False
        if self.legacy:
            return _match(self.tokens, _tokens(address), (USER_TOKEN, user))
        if self.place == "prefix":
            rest = address[len(user):]
            if not address.startswith(user) or (rest and rest[0] not in _SEPARATORS):
                return False
            address = USER_SUBST + rest
        elif self.place == "suffix":
            rest = address[:len(address) - len(user)]
            if len(user) > len(address) or not address.endswith(user) or (
                    rest and rest[-1] not in _SEPARATORS):
                return False
            address = rest + USER_SUBST
        return _match(self.tokens, _tokens(address))


def _tokens(text: str) -> List[str]:
    return text.replace("/", ".").split(".")


def _match(pattern: List[str], tokens: List[str], substitute: Tuple[str, str] | None = None) -> bool:
    """Iterative glob over tokens, so hostile patterns cannot recurse deeply or blow up. With
    ``substitute`` (token, user), a pattern token holding the token must equal the address
    token with the user's name in its place, literally."""
    p = t = 0
    star_p = star_t = -1
    while t < len(tokens):
        word = pattern[p] if p < len(pattern) else None
        if word == "#":
            star_p, star_t = p, t
            p += 1
        elif word is not None and (word == "*" or _token_equal(word, tokens[t], substitute)):
            p += 1
            t += 1
        elif star_p >= 0:
            star_t += 1
            p, t = star_p + 1, star_t
        else:
            return False
    while p < len(pattern) and pattern[p] == "#":
        p += 1
    return p == len(pattern)


def _token_equal(word: str, token: str, substitute: Tuple[str, str] | None) -> bool:
    if substitute is not None and substitute[0] in word:
        return word.replace(substitute[0], substitute[1], 1) == token
    return word == token


def parse_patterns(value: Any, field: str) -> Tuple[AddressPattern, ...]:
    return tuple(AddressPattern(item, field) for item in parse_list(value, field))
