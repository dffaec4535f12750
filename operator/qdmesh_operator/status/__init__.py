"""Stage 7, status: every status to write and every Event to post, from what the earlier
stages found and did (compose.py puts them together; kstatus.py has the conditions)."""

from .compose import reconciled_report, refused_report
from .kstatus import Verdict
from .lost import routers_to_ask
from .mesh import stalled_report
from .paused import paused_report
from .report import Event, Report
from .routing import orphan_status, orphans_report
from .unchanged import unchanged_statuses

__all__ = ["Event", "Report", "Verdict", "orphan_status", "orphans_report", "paused_report",
           "reconciled_report", "refused_report", "routers_to_ask", "stalled_report", "unchanged_statuses"]
