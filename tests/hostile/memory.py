"""A router process's memory, as the kernel counts it."""

from __future__ import annotations

from pathlib import Path

from tests.router.routerproc import Router

# Every hostile scenario must keep the router's resident memory below this. The C router
# stays at 26-28 MB in the same scenarios; a router without back-pressure reached GBs in
# seconds. Generous enough for a loaded 2-core machine (Python's own 30-40 MB included).
CEILING_MB = 150


def status_kb(router: Router, field: str) -> int:
    """``field`` (VmRSS: resident now; VmHWM: the most it has been) in KiB."""
    for line in Path(f"/proc/{router.pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{router.pid}/status")


def peak_mb(router: Router) -> float:
    return status_kb(router, "VmHWM") / 1024


def rss_mb(router: Router) -> float:
    return status_kb(router, "VmRSS") / 1024
