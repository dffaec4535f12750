"""Process lifecycle: signals, command-line options, config syntax accepted at startup."""

from __future__ import annotations

import signal
import time

from .amqpclient import ACCEPTED, Net, msg, send_and_settle
from .routerproc import Router, RouterFactory, run_qdrouter


def test_sigterm_exits_zero_promptly_and_clients_see_close(router: Router, net: Net) -> None:
    c1 = net.connect(router.url)
    rcv = c1.receiver("life.term")
    c2 = net.connect(router.url)
    snd = c2.sender("life.term")
    assert [o.state for o in send_and_settle(net, snd, [msg("before shutdown")])] == [ACCEPTED]
    assert rcv.bodies() == ["before shutdown"]
    start = time.monotonic()
    code = router.terminate(signal.SIGTERM, timeout=10)
    elapsed = time.monotonic() - start
    assert code == 0, f"exit code {code} after SIGTERM\n{router.describe()}"
    assert elapsed < 5, f"router took {elapsed:.1f}s to exit after SIGTERM"
    net.wait(lambda: not c1.alive and not c2.alive, 5, "clients to see the connection close")
    assert "Traceback" not in router.stderr_text(), router.describe()


def test_sigterm_idle_router_exits_zero(router: Router) -> None:
    assert router.terminate(signal.SIGTERM, timeout=5) == 0, router.describe()
    assert "Traceback" not in router.stderr_text()


def test_sigint_exits_cleanly_without_traceback(router: Router) -> None:
    """Ctrl-C on a foreground router: clean exit, no KeyboardInterrupt traceback."""
    code = router.terminate(signal.SIGINT, timeout=5)
    assert code is not None, "router ignored SIGINT"
    assert "Traceback" not in router.stderr_text(), router.describe()
    assert code == 0, router.describe()


def test_port_closed_after_shutdown(router: Router) -> None:
    assert router.terminate(signal.SIGTERM, timeout=5) == 0
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


def test_config_with_comments_and_brace_on_own_line(router_factory: RouterFactory, net: Net) -> None:
    """The qdrouterd.conf dialect: '#' comments, '{' alone on a line, blank lines."""
    extra = "\n".join([
        "# a fan-out address declared in the other brace style",
        "address",
        "{",
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

