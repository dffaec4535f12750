"""The router's open-files limit: every connection holds a socket, so a router with the
common default soft limit (1,024) could not accept its thousandth client. At start the
router raises its soft RLIMIT_NOFILE to the hard limit, as the Go runtime does for every
program; the hard limit (ulimit -Hn, systemd's LimitNOFILE, a container's nofile) is the
administrator's, and the router never goes past it. docs/configuration.md says how many
descriptors N connections need."""

from __future__ import annotations

import resource

# Linux refuses more than fs.nr_open (1,048,576 by default) even under an infinite hard limit.
CEILING = 1_048_576

# What raise_soft_limit did, for the start-up log ("1024 -> 524288"); None if nothing.
raised: str | None = None


def raise_soft_limit() -> str | None:
    """Soft limit up to the hard one; returns what changed ("OLD -> NEW"), or None."""
    global raised
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return None
    target = CEILING if hard == resource.RLIM_INFINITY else hard
    if soft == resource.RLIM_INFINITY or soft >= target:
        return None
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (OSError, ValueError):
        return None  # a sandbox that forbids it: the limit stays as it was
    raised = f"{soft} -> {target}"
    return raised

