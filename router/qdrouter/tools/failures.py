"""Why a management call failed, in words a user can act on: proton's exceptions turned into
ManagementErrors, with the reason read back from the condition proton quotes (a refused
connection, a policy refusal naming its rule, a peer that answers HTTP or TLS instead of AMQP)."""

from __future__ import annotations

import ast
import re
from typing import Any

from proton import ConnectionException, ProtonException, Timeout
from proton.utils import LinkDetached

from .errors import ManagementConnectionError, ManagementError, ManagementTimeout


def translate(exc: BaseException, doing: str, *, address: str, host_port: str,
              timeout: float) -> ManagementError:
    """The ManagementError for a proton failure while ``doing`` something with the agent at
    ``address`` through ``host_port``."""
    if isinstance(exc, ManagementError):
        return exc
    if isinstance(exc, Timeout):
        return ManagementTimeout(f"timed out after {timeout:g}s {doing} at {host_port}")
    if isinstance(exc, LinkDetached):
        # exc.condition is only the condition's name, and the link's condition is gone once
        # BlockingLink has closed it: the description (a policy refusal names the rule
        # there) survives only in the exception's text.
        description = _repr_description(str(exc)) if exc.condition else ""
        reason = f"{exc.condition}: {description}" if description else condition_text(exc.condition)
        return ManagementConnectionError(f"{address} at {host_port} refused the link: {reason}")
    if isinstance(exc, (ConnectionException, ProtonException)):
        return ManagementConnectionError(f"connection to {host_port} failed: {connection_reason(exc)}")
    if isinstance(exc, Exception):
        return ManagementError(f"{doing}: {exc}")
    raise exc  # KeyboardInterrupt and friends are not ours to swallow


def condition_text(condition: Any) -> str:
    if condition is None:
        return "no reason given"
    description = getattr(condition, "description", None)
    name = getattr(condition, "name", None)
    return f"{name}: {description}" if description else str(name or condition)


def connection_reason(exc: BaseException) -> str:
    """A short reason for a proton connection failure ("connection refused", ...)."""
    text = str(exc)
    lowered = text.lower()
    if "refused" in lowered:
        return "connection refused"
    description = _repr_description(text)
    if "protocol header" in description:  # the peer is no AMQP 1.0 listener
        return _not_amqp(description)
    if "unauthorized" in lowered or "authentication" in lowered or "sasl" in lowered:
        return "authentication failed" + (f" ({_condition_tail(text)})" if _condition_tail(text) else "")
    tail = _condition_tail(text)
    return tail or text


def _not_amqp(description: str) -> str:
    """What to say when proton found no AMQP (SASL) protocol header in the peer's answer:
    "... got: Unknown protocol ['HTTP/1.1 400 Bad Request\\x0d...']", "... no protocol
    header found (connection aborted)", "... got: AMQP 1.0 layer [...]"."""
    if "no protocol header found" in description:
        return ("the peer closed the connection without an AMQP answer "
                "(not an AMQP port? a TLS one needs amqps://)")
    answer = _ANSWER.search(description)
    if "Unknown protocol" in description and answer is not None:
        first = answer.group(1)
        if first.startswith(("\\x15\\x03", "\\x16\\x03")):
            return "the peer answered in TLS, not AMQP (use amqps://)"
        return f"the peer does not speak AMQP (it answered {first!r})"
    return f"protocol mismatch ({description})"


# The first line of the bytes proton quotes: "['HTTP/1.1 400 Bad Request\\x0d\\x0a...".
_ANSWER = re.compile(r"\['([^'\\]*)")


def _repr_description(text: str) -> str:
    """The description inside a proton "Condition('name', 'description')" repr at the end of
    ``text`` ('' when there is none or it cannot be read back)."""
    start = text.rfind("Condition(")
    if start < 0:
        return ""
    try:
        fields = ast.literal_eval(text[start + len("Condition"):])
    except (ValueError, SyntaxError):
        return ""
    if isinstance(fields, tuple) and len(fields) > 1 and isinstance(fields[1], str):
        return fields[1]
    return ""


def _condition_tail(text: str) -> str:
    """The description inside proton's "Condition('name', 'description')" text, if any."""
    start = text.find("Condition(")
    if start < 0:
        return ""
    parts = text[start + len("Condition("):].rstrip(")").split("', '")
    return parts[-1].strip("'\" ") if len(parts) > 1 else parts[0].strip("'\" ")
