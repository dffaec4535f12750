"""Day-2 operations of a RouterMesh, pure: the annotations a user drives the operator with
(pause, manual rolling update), maintenance time windows, and why a rolling restart is due.
No Kubernetes client: every stage may use them."""

from .annotations import (
                          MANUAL_ROLL_ANNOTATION,
                          PAUSE_ANNOTATION,
                          RESTARTED_AT_ANNOTATION,
                          manual_roll_requested,
                          paused,
                          restarted_at,
)
from .windows import CronError, in_any_window, parse_window

__all__ = ["MANUAL_ROLL_ANNOTATION", "PAUSE_ANNOTATION", "RESTARTED_AT_ANNOTATION", "CronError",
           "in_any_window", "manual_roll_requested", "parse_window", "paused", "restarted_at"]
