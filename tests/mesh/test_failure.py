"""A router of a redundant mesh crashes (SIGKILL) and comes back: how long until every
survivor stops listing it and traffic takes the other path, and until the mesh reconverges."""

from __future__ import annotations

import time

from tests.mesh.conftest import RING5_CHORD, MeshFactory
from tests.mesh.meshproc import lost_after
from tests.mesh.traffic import trace_of, wait_received, wait_remote
from tests.router.amqpclient import Net, msg, send_and_settle

MARGIN_S = 2.0


def test_kill_middle_router_of_ring_and_restart(mesh_factory: MeshFactory, net: Net) -> None:
    mesh = mesh_factory(RING5_CHORD)
    addr = "closest/failover"
    rcv = net.connect(mesh["D"].url).receiver(addr)
    wait_remote(mesh, "B", addr, 1, net=net)
    snd = net.connect(mesh["B"].url).sender(addr)
    assert send_and_settle(net, snd, [msg("probe")])[0].name == "accepted"
    wait_received(net, [rcv], 1)
    path = trace_of(rcv.received[0])
    assert len(path) == 3, path   # B, then C or E, then D
    victim = path[1].split("/")[-1]

    t_kill = time.monotonic()
    kill_wall = time.time()
    mesh.kill(victim)
    bound = mesh.timers.hello_max_age + MARGIN_S
    gone_at: dict = {}
    deadline = t_kill + mesh.timers.convergence_bound + 5
    while len(gone_at) < len(mesh.alive) and time.monotonic() < deadline:
        for rid in mesh.alive:
            if rid not in gone_at:
                try:
                    if victim not in mesh.nodes(rid):
                        gone_at[rid] = time.monotonic() - t_kill
                except Exception:
                    pass
        net.process()
        time.sleep(0.05)
    worst_gone = max(gone_at.values(), default=float("inf"))
    # When the victim's neighbours dropped it, from their own logs: the polls above also
    # measure how long four management queries take on a busy machine.
    neighbours_lost = {rid: lost_after(mesh[rid], victim, kill_wall) for rid in mesh.alive}
    neighbours_lost = {rid: t for rid, t in neighbours_lost.items() if t != float("inf")}
    mesh.wait_converged()
    converged = time.monotonic() - t_kill
    # Traffic flows over the other path.
    t_send = time.monotonic()
    outcomes = send_and_settle(net, snd, [msg(i) for i in range(20)], timeout=10)
    wait_received(net, [rcv], 21)
    flow_s = time.monotonic() - t_kill
    print(f"killed {victim}: neighbours dropped it after {neighbours_lost}, "
          f"removed from tables after {gone_at} (worst {worst_gone:.2f}s), "
          f"shortest paths everywhere after {converged:.2f}s, traffic flowing {flow_s:.2f}s after kill "
          f"(send took {time.monotonic() - t_send:.2f}s)")
    assert len(gone_at) == len(mesh.alive), f"still listed {victim}: {set(mesh.alive) - set(gone_at)}"
    assert neighbours_lost, f"no neighbour logged losing {victim}"
    assert max(neighbours_lost.values()) <= bound, (
        f"{victim}'s neighbours dropped it after {neighbours_lost} (bound {bound}s)")
    assert {o.name for o in outcomes} == {"accepted"}
    assert all(f"0/{victim}" not in trace_of(r) for r in rcv.received[1:])

    t_restart = time.monotonic()
    mesh.restart(victim)
    # The neighbours' connectors to the victim are in backoff (2 s, 4 s ... since the kill),
    # the victim's own connectors connect at once.
    took = mesh.wait_converged(timeout=mesh.timers.convergence_bound + 10)
    print(f"restarted {victim} {t_restart - t_kill:.2f}s after the kill: full tables "
          f"{time.monotonic() - t_restart:.2f}s after restart (polling {took:.2f}s)")
    assert set(mesh.nodes("B")) == set("ACDE")
