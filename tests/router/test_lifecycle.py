"""Process lifecycle: signals, command-line options, config syntax accepted at startup."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .amqpclient import ACCEPTED, Net, msg, send_and_settle
from .routerproc import Router, RouterFactory, router_command, router_env, run_qdrouter


def test_sigterm_exits_zero_promptly_and_clients_see_close(router: Router, net: Net) -> None:
    c1 = net.connect(router.url)
    rcv = c1.receiver("life.term")
    c2 = net.connect(router.url)
    snd = c2.sender("life.term")
    assert [o.state for o in send_and_settle(net, snd, [msg("before shutdown")])] == [ACCEPTED]
    assert rcv.bodies() == ["before shutdown"]
    start = time.monotonic()
    code = router.terminate(signal.SIGTERM, timeout=15)
    elapsed = time.monotonic() - start
    assert code == 0, f"exit code {code} after SIGTERM\n{router.describe()}"
    # The router gives connections 2 s to close; the rest is margin for a busy machine.
    assert elapsed < 10, f"router took {elapsed:.1f}s to exit after SIGTERM"
    net.wait(lambda: not c1.alive and not c2.alive, 5, "clients to see the connection close")
    assert "Traceback" not in router.stderr_text(), router.describe()


@pytest.mark.differs_from_c("on SIGTERM qdrouterd closes its sockets without an outcome for what it "
                             "holds (the producer's deliveries stay in doubt); qdmesh gives each one: "
                             "modified if a consumer had it, released otherwise")
def test_sigterm_gives_every_unsettled_delivery_an_outcome(router: Router, net: Net) -> None:
    """The sender connected first, so its connection would close first: still, what the
    consumer holds comes back modified (it may have been seen) and what waited for credit
    released (nobody saw it), before the close."""
    snd = net.connect(router.url).sender("life.outcomes")
    rcv = net.connect(router.url).receiver("life.outcomes", credit=2, refill=False, settle=None)
    net.pump(0.3)
    tags = [snd.send(msg(f"m{i}")) for i in range(5)]
    net.wait(lambda: len(rcv.received) == 2, 10, "2 messages (the credit given)")
    net.pump(0.3)
    assert router.terminate(signal.SIGTERM, timeout=10) == 0, router.describe()
    net.wait(lambda: all(t in snd.outcomes for t in tags), 10, "an outcome for every message")
    outcomes = [snd.outcomes[t].name if t in snd.outcomes else "in doubt" for t in tags]
    assert outcomes == ["modified"] * 2 + ["released"] * 3


def test_sigterm_idle_router_exits_zero(router: Router) -> None:
    assert router.terminate(signal.SIGTERM, timeout=15) == 0, router.describe()
    assert "Traceback" not in router.stderr_text()


@pytest.mark.differs_from_c("qdrouterd shuts down on SIGINT, then re-raises it and dies by the signal "
                             "(router/src/main.c, exit -2); qdmesh exits 0")
def test_sigint_exits_cleanly_without_traceback(router: Router) -> None:
    """Ctrl-C on a foreground router: clean exit, no KeyboardInterrupt traceback."""
    code = router.terminate(signal.SIGINT, timeout=15)
    assert code is not None, "router ignored SIGINT"
    assert "Traceback" not in router.stderr_text(), router.describe()
    assert code == 0, router.describe()


def test_port_closed_after_shutdown(router: Router) -> None:
    assert router.terminate(signal.SIGTERM, timeout=15) == 0
    assert not Router._port_open(router.port), "listener still accepting after exit"


def test_help_lists_options() -> None:
    res = run_qdrouter(["--help"])
    assert res.returncode == 0, res.stderr
    for opt in ("--config", "--include", "--daemon", "--pidfile"):
        assert opt in res.stdout, f"{opt} missing from --help"


def test_version_prints_version() -> None:
    res = run_qdrouter(["--version"])
    assert res.returncode == 0, res.stderr
    out = (res.stdout + res.stderr).strip()
    assert out and any(ch.isdigit() for ch in out), f"no version number in {out!r}"


def test_config_with_comments_and_blank_lines(router_factory: RouterFactory, net: Net) -> None:
    """The qdrouterd.conf dialect: '#' comments, blank lines, trailing blanks."""
    _fan_out_address_works(router_factory, net, ["# a fan-out address", "address {"])


@pytest.mark.qdmesh_only("'{' on a line of its own: qdrouterd 1.19's parser needs 'NAME {' on one line")
def test_config_with_brace_on_own_line(router_factory: RouterFactory, net: Net) -> None:
    _fan_out_address_works(router_factory, net, ["# a fan-out address declared in the other brace style",
                                                 "address", "{"])


def _fan_out_address_works(router_factory: RouterFactory, net: Net, opening: list) -> None:
    extra = "\n".join([
        *opening,
        "    # the prefix",
        "    prefix: bcast",
        "",
        "    distribution: multicast   ",
        "}",
    ])
    router = router_factory(extra_config=extra)
    a = net.connect(router.url).receiver("bcast.x")
    b = net.connect(router.url).receiver("bcast.x")
    snd = net.connect(router.url).sender("bcast.x")
    send_and_settle(net, snd, [msg("to both")])
    net.wait(lambda: len(a.received) == 1 and len(b.received) == 1, 10, "a copy at each receiver")



def _process_gone(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status   # exited, waiting to be reaped by init


@pytest.mark.differs_from_c("qdrouterd leaves its pid file behind when the daemon exits; qdmesh "
                             "removes it")
def test_daemon_writes_pidfile_and_stops_on_sigterm(tmp_path: Path, net: Net) -> None:
    """-d -P FILE: the command returns at once, the daemon serves, its pid is in FILE,
    and SIGTERM to that pid stops it and removes FILE."""
    r = Router(tmp_path)   # only for its config and port
    pidfile = tmp_path / "qdrouterd.pid"
    res = subprocess.run([*router_command(), "-c", str(r.config_path), "-d", "-P", str(pidfile)],
                         capture_output=True, text=True, timeout=15, env=router_env(), cwd=str(tmp_path),
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    deadline = time.monotonic() + 15
    while not (pidfile.exists() and pidfile.read_text().strip() and Router._port_open(r.port)):
        assert time.monotonic() < deadline, "daemon did not write its pid file and listen"
        time.sleep(0.05)
    pid = int(pidfile.read_text().strip())
    try:
        assert not _process_gone(pid)
        c = net.connect(r.url)
        rcv = c.receiver("life.daemon")
        snd = c.sender("life.daemon")
        send_and_settle(net, snd, [msg("daemonized")])
        assert rcv.bodies() == ["daemonized"]
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while not _process_gone(pid):
            assert time.monotonic() < deadline, "daemon did not exit within 10 s of SIGTERM"
            net.pump(0.05)
        assert not pidfile.exists(), "pid file left behind"
    finally:
        if not _process_gone(pid):
            os.kill(pid, signal.SIGKILL)
