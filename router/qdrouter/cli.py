"""The `qdrouterd` command: qdrouterd's command line, our router."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from typing import Any, Dict, List, Sequence, Tuple

from . import __version__, log_config
from .tuning import open_files, startup_gc

# --drain-timeout's default: a drain and the stop after it fit in Kubernetes' default
# terminationGracePeriodSeconds (30) with room to spare.
DEFAULT_DRAIN_TIMEOUT_S = 20.0
# The same from the environment, when the option is not given: how the operator sets it, since
# a router image from before the option ignores an unknown variable but refuses an option.
DRAIN_TIMEOUT_ENV = "QDMESH_DRAIN_TIMEOUT"

DESCRIPTION = "qdmesh router: an AMQP 1.0 message router, command-line compatible with qdrouterd."


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="qdrouterd", description=DESCRIPTION)
    parser.add_argument(
        "-c",
        "--config",
        metavar="FILE",
        help="configuration file (qdrouterd.conf syntax or JSON); "
        "default: the embedded standalone configuration (127.0.0.1:5672)",
    )
    parser.add_argument(
        "-I",
        "--include",
        metavar="PATH",
        help="accepted for compatibility with qdrouterd (its Python module path); unused",
    )
    parser.add_argument("-d", "--daemon", action="store_true", help="run as a daemon in the background")
    parser.add_argument("-P", "--pidfile", metavar="FILE", help="write the process id to FILE")
    parser.add_argument(
        "-T",
        "--test-hooks",
        action="store_true",
        help="enable test hooks (for tests only): the management operation TEST-FAULT may then "
        "arm a failure of the next delivery to an address, management request, routing-protocol "
        "control message or HTTP request, to test the router's fault containment (docs/management.md)",
    )
    parser.add_argument(
        "--drain-timeout",
        metavar="SECONDS",
        type=_seconds,
        default=None,
        help="qdmesh: on SIGTERM, drain for at most SECONDS before stopping: accept no new "
        "connections or links, have the other routers route around this one, let in-flight "
        "deliveries settle, then hand clients back (amqp:connection:forced) and exit 0; what is "
        "still unsettled then gets released or modified. 0: stop at once. A second SIGTERM, or "
        "SIGINT, stops at once. Default: $QDMESH_DRAIN_TIMEOUT if set, else 20 (docs/operations.md, "
        "\"Draining a router\")",
    )
    parser.add_argument("-v", "--version", action="version", version=f"qdrouterd (qdmesh) {__version__}")
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= 3600 or value != value:
        raise argparse.ArgumentTypeError(f"must be 0 to 3600 seconds, not {text}")
    return value


def _fail(message: str, code: int = 1) -> int:
    sys.stderr.write(f"qdrouterd: {message}\n")
    return code


def _load(path: str | None) -> List[object]:
    from .config import default_config, load_config

    if path is None:
        return list(default_config())
    return list(load_config(path))


def _log_settings(entities: Sequence[object]) -> List[tuple]:
    settings = []
    for entity in entities:
        if getattr(entity.type, "config_section", None) == "log":  # type: ignore[attr-defined]
            attrs = entity.attributes  # type: ignore[attr-defined]
            settings.append(
                (
                    str(attrs.get("module", "DEFAULT")),
                    attrs.get("enable"),
                    attrs.get("outputFile"),
                )
            )
    return settings


def _log_includes(entities: Sequence[object]) -> Dict[str, Tuple[Any, Any]]:
    includes = {}
    for entity in entities:
        if getattr(entity.type, "config_section", None) == "log":  # type: ignore[attr-defined]
            attrs = entity.attributes  # type: ignore[attr-defined]
            includes[str(attrs.get("module", "DEFAULT"))] = (attrs.get("includeTimestamp"),
                                                             attrs.get("includeSource"))
    return includes


def _daemonize() -> None:
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.drain_timeout is None:
        from_env = os.environ.get(DRAIN_TIMEOUT_ENV)
        try:
            args.drain_timeout = _seconds(from_env) if from_env else DEFAULT_DRAIN_TIMEOUT_S
        except argparse.ArgumentTypeError as error:
            parser.error(f"environment variable {DRAIN_TIMEOUT_ENV}: {error}")
    from .config import ConfigError
    from .router import Router, RouterSetupError

    try:
        entities = _load(args.config)
    except ConfigError as error:
        return _fail(str(error))
    except OSError as error:
        return _fail(f"cannot read configuration file {args.config}: {error.strerror}")
    try:
        log_config.configure(_log_settings(entities))
        log_config.set_includes(_log_includes(entities))
    except (log_config.LogSettingError, OSError) as error:
        return _fail(f"log: {error}")
    config_log = logging.getLogger("qdrouter.ROUTER")
    for entity in entities:
        for warning in getattr(entity, "warnings", ()):
            config_log.warning("%s", warning)
    open_files.raise_soft_limit()
    try:
        router = Router(entities, test_hooks=args.test_hooks, drain_timeout_s=args.drain_timeout)
        # Start-up's objects left out of every later collection (tuning/startup_gc.py says why);
        # before the listeners open, so that whoever waits for the port waits for this too.
        startup_gc.freeze_startup_objects()
        router.start_listeners()
    except RouterSetupError as error:
        return _fail(str(error))
    if args.daemon:
        _daemonize()
    if args.pidfile:
        try:
            with open(args.pidfile, "w") as handle:
                handle.write(f"{os.getpid()}\n")
        except OSError as error:
            return _fail(f"cannot write pid file {args.pidfile}: {error.strerror}")
    signal.signal(signal.SIGTERM, lambda *_: router.request_drain())
    signal.signal(signal.SIGINT, lambda *_: router.request_stop())
    try:
        router.run()
    finally:
        if args.pidfile:
            try:
                os.unlink(args.pidfile)
            except OSError:
                pass
    return 0


def console_main() -> None:
    from .tuning.pypy_gc import own_command_line, tune_or_continue
    from .tuning.pypy_jit import lengthen_traces

    tune_or_continue(sys.argv[1:])
    lengthen_traces(own_command_line(sys.argv[1:]))
    sys.exit(main())


if __name__ == "__main__":
    console_main()
