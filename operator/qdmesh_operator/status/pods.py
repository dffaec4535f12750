"""What the router pods that are not ready say about why (pod_problems.py), in the
RouterMesh's conditions and in Warning Events.  Pure.

Waiting does not cure an image that cannot be pulled, a crash loop or a configuration the
kubelet refuses: ``Stalled`` says so.  An unschedulable pod may yet be scheduled (a node added,
another pod gone): the mesh is still ``Reconciling``, with the scheduler's message."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Dict, List, Mapping

from ..pod_problems import PodProblem
from . import kstatus as status
from .report import Event, ref


def describe(problems: Mapping[str, PodProblem]) -> str:
    """``m-0, m-1: ImagePullBackOff: container router: Back-off pulling image "x"; m-2: ...``"""
    groups: Dict[PodProblem, List[str]] = defaultdict(list)
    for rid in sorted(problems):
        groups[problems[rid]].append(rid)
    return "; ".join(f"{', '.join(rids)}: {problem.describe()}" for problem, rids in groups.items())


def pods_verdict(problems: Mapping[str, PodProblem]) -> status.Verdict:
    """Stalled, with the first stalling problem's reason, when waiting will not help; else
    progressing with the first problem's reason.  The message names every router's problem."""
    ordered = [problems[rid] for rid in sorted(problems)]
    stalled = [p for p in ordered if p.stalled]
    reason = (stalled or ordered)[0].reason
    message = describe(problems)
    return status.Verdict.stalled(reason, message) if stalled else status.Verdict.progressing(reason, message)


def pod_events(body: Mapping[str, Any], problems: Mapping[str, PodProblem]) -> List[Event]:
    """A Warning per problem newly seen on a router: the last status names each router's
    problem (routerStatus[].message; edgeGroups[].routers[].message for edge routers), so
    one that stands is announced once, not at every drift check, and again only when it
    changes."""
    last = body.get("status") or {}
    entries = [*(last.get("routerStatus") or []),
               *(r for g in last.get("edgeGroups") or [] for r in g.get("routers") or [])]
    previous = {str(r.get("name")): str(r.get("message") or "") for r in entries}
    fresh = {rid: p for rid, p in problems.items()
             if not previous.get(rid, "").startswith(f"pod not ready: {p.reason}:")
             and previous.get(rid, "") != f"pod not ready: {p.reason}"}
    groups: Dict[str, Dict[str, PodProblem]] = defaultdict(dict)
    for rid, problem in fresh.items():
        groups[problem.reason][rid] = problem
    return [Event(ref(body), "Warning", reason, describe(found)) for reason, found in sorted(groups.items())]
