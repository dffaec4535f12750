"""Why a pod is not running, as the pod itself says: the scheduler's PodScheduled condition
(Unschedulable and its message) and each container's waiting state (an image that cannot be
pulled, a crash loop with how the last run ended, a configuration the kubelet cannot use)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Waiting reasons waiting longer will not cure: the spec (or the image, or the cluster) must change.
STALLING = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
                      "CreateContainerConfigError", "CreateContainerError", "RunContainerError",
                      "CrashLoopBackOff"})
UNSCHEDULABLE = "Unschedulable"
#: The kubelet alternates ErrImagePull and ImagePullBackOff at each retry: one problem, one name.
_SAME = {"ErrImagePull": "ImagePullBackOff"}


@dataclass(frozen=True)
class PodProblem:
    reason: str
    message: str

    @property
    def stalled(self) -> bool:
        return self.reason in STALLING

    def describe(self) -> str:
        return f"{self.reason}: {self.message}" if self.message else self.reason


def pod_problem(pod: Any) -> PodProblem | None:
    """The first thing that keeps a kubernetes.client V1Pod from running, or None."""
    status = pod.status
    if status is None:
        return None
    for condition in status.conditions or []:
        if condition.type == "PodScheduled" and condition.status == "False" and \
                condition.reason == UNSCHEDULABLE:
            return PodProblem(UNSCHEDULABLE, str(condition.message or ""))
    for container in [*(status.init_container_statuses or []), *(status.container_statuses or [])]:
        waiting = container.state.waiting if container.state else None
        if waiting is None or waiting.reason not in STALLING:
            continue
        message = str(waiting.message or "")
        if waiting.reason == "CrashLoopBackOff":
            message = _last_run(container) or message
        return PodProblem(_SAME.get(waiting.reason, waiting.reason), f"container {container.name}: {message}")
    return None


def _last_run(container: Any) -> str:
    """How the container's last run ended: ``last exit: Error (exit code 1): <message>``."""
    ended = container.last_state.terminated if container.last_state else None
    if ended is None:
        return ""
    text = f"last exit: {ended.reason or 'terminated'} (exit code {ended.exit_code})"
    return f"{text}: {ended.message.strip()[:300]}" if ended.message else text
