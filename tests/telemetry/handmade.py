"""Small hand-built snapshot inputs for the edge cases, with the figures they must produce.

Times are seconds after T0; snapshots every 10 s unless a case says otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

T0 = 1_790_000_000.0  # on a bucket boundary for 10 s buckets

Row = Dict[str, Any]


def row(mesh: str, router: str, entity: str, t: float, **attributes: Any) -> Row:
    return {"mesh": mesh, "router": router, "entity": entity, "ts": T0 + t, "attributes": attributes}


def router(mesh: str, name: str, t: float, uptime: float | None) -> Row:
    return row(mesh, name, "router", t, id=name, uptimeSeconds=uptime, memoryUsage=50_000_000)


def producer_link(mesh: str, name: str, t: float, identity: str, address: str, delivered: int) -> Row:
    return row(mesh, name, "router.link", t, identity=identity, linkName=f"producer-{identity}",
               linkType="endpoint", linkDir="in", owningAddr=f"M0{address}", capacity=250,
               undeliveredCount=0, unsettledCount=0, deliveryCount=delivered, acceptedCount=delivered,
               rejectedCount=0, releasedCount=0, modifiedCount=0, presettledCount=0,
               droppedPresettledCount=0, creditAvailable=250, connectionId="1")


def autolink(mesh: str, name: str, t: float, autolink_name: str, status: str,
             error: str | None = None) -> Row:
    return row(mesh, name, "router.config.autoLink", t, identity=autolink_name, name=autolink_name,
               addr="queue.orders", direction="out", containerId="broker", operStatus=status, lastError=error)


EXPECTED = {
    # resets: R1 restarts between t=20 and t=30 (uptime 120 -> 5).
    ("resets", "orders"): 170,   # 100 150 200 | 30 50 70: 50+50 + 30+20+20
    ("resets", "bulk"): 240,     # 10 20 30 | 200 210 220: 10+10 + 200 (not 170) +10+10
    ("resets", "nouptime"): 8,   # R2 has no router rows: 5 9 3 4 -> 4 + 3 + 1 (a drop is a reset)
    # gaps: G1 seen at 0, 10, 20, then not until 80, 90; one delivery a second throughout.
    ("gaps", "feed"): 90,
    # joins: J2 leaves after 20 (0 5 9: 9); J3 joins at 30 (500 510 530: 30, its first
    # snapshot is a baseline); J1's link appears in its third snapshot with 7 (new: all 7
    # count), then 10 10 10.
    ("joins", "feed"): 9 + 30 + 10,
    # leaves: a producer's link closes between two snapshots (leaving_producer_rows).
    ("leaves", "feed"): 100,
}
MALFORMED = 5


def edge_case_rows() -> List[Row]:
    rows: List[Row] = []
    uptimes = [100, 110, 120, 5, 15, 25]
    orders = [100, 150, 200, 30, 50, 70]
    bulk = [10, 20, 30, 200, 210, 220]
    for i, (up, o, b) in enumerate(zip(uptimes, orders, bulk)):
        rows += [router("resets", "R1", i * 10, up), producer_link("resets", "R1", i * 10, "1", "orders", o),
                 producer_link("resets", "R1", i * 10, "2", "bulk", b)]
    for i, value in enumerate([5, 9, 3, 4]):
        rows.append(producer_link("resets", "R2", i * 10, "7", "nouptime", value))

    for t in (0, 10, 20, 80, 90):
        rows += [router("gaps", "G1", t, 1000 + t), producer_link("gaps", "G1", t, "1", "feed", t)]

    for t in range(0, 60, 10):
        rows.append(router("joins", "J1", t, 500 + t))
        if t >= 20:
            rows.append(producer_link("joins", "J1", t, "3", "feed", 7 if t == 20 else 10))
    for t, value in ((0, 0), (10, 5), (20, 9)):
        rows += [router("joins", "J2", t, 50 + t), producer_link("joins", "J2", t, "1", "feed", value)]
    for t, value in ((30, 500), (40, 510), (50, 530)):
        rows += [router("joins", "J3", t, 900 + t), producer_link("joins", "J3", t, "1", "feed", value)]

    flapping = ["active", "failed", "active", "failed", "active", "failed", "active"]
    for i, status in enumerate(flapping):
        error = "amqp:not-found: no queue" if status == "failed" else None
        rows += [router("flaps", "F1", i * 10, 100 + i * 10),
                 autolink("flaps", "F1", i * 10, "orders-out", status, error),
                 autolink("flaps", "F1", i * 10, "steady-out", "active")]
    return rows


def malformed_lines() -> List[str]:
    good = row("resets", "R1", "router.link", 5.0, identity="9", deliveryCount="lots")  # not a number
    return [
        "this is not json",
        json.dumps({"mesh": "resets", "entity": "router", "ts": T0, "attributes": {}}),       # no router
        json.dumps({"mesh": "resets", "router": "R1", "entity": "router", "ts": "yesterday",
                    "attributes": {}}),
        json.dumps({"mesh": "resets", "router": "R1", "entity": "router", "ts": T0, "attributes": 5}),
        json.dumps(good),
    ]


def write_edge_cases(directory: Path) -> Path:
    """The rows above as collector-style files (one partition directory per mesh), the
    malformed lines in a file of their own, and a half-written file that must be ignored."""
    by_mesh: Dict[str, List[Row]] = {}
    for r in edge_case_rows() + leaving_producer_rows():
        by_mesh.setdefault(r["mesh"], []).append(r)
    for mesh, rows in by_mesh.items():
        target = directory / f"mesh={mesh}" / "date=2026-09-21" / "hour=14"
        target.mkdir(parents=True, exist_ok=True)
        (target / f"{mesh}-1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    bad = directory / "mesh=resets" / "date=2026-09-21" / "hour=14"
    (bad / "resets-2.jsonl").write_text("\n".join(malformed_lines()) + "\n")
    (bad / ".resets-3.jsonl.tmp").write_text('{"mesh": "resets", "router": "R1", "ent')
    return directory


def address(mesh: str, name: str, t: float, key: str, ingress: int, egress: int) -> Row:
    return row(mesh, name, "router.address", t, identity=key, key=key, deliveriesIngress=ingress,
               deliveriesEgress=egress, deliveriesTransit=0)


def leaving_producer_rows() -> List[Row]:
    """L1: a producer on `feed` sends 40 by t=10, 60 more, then closes before t=20; a consumer
    stays. The link is gone from t=20 on; the address counted all 100."""
    rows: List[Row] = []
    for t, ingress in ((0, 0), (10, 40), (20, 100), (30, 100)):
        rows += [router("leaves", "L1", t, 100 + t), address("leaves", "L1", t, "M0feed", ingress, ingress)]
    rows += [producer_link("leaves", "L1", t, "4", "feed", sent) for t, sent in ((0, 0), (10, 40))]
    return rows
