"""What qdstat and qdmanage share: connection options, the client they build, one-line errors."""

from __future__ import annotations

import argparse
import sys
import uuid
from typing import Any, Callable, List, NoReturn, Sequence

from qdrouter import __version__

from .errors import ManagementError
from .management_client import DEFAULT_URL, ManagementClient

DEFAULT_TIMEOUT = 5.0


class ToolArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit 2), not usage text plus error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class UsageError(Exception):
    """A command line that parses but makes no sense (reported like an argparse error)."""


def make_parser(prog: str, description: str, epilog: str | None = None) -> ToolArgumentParser:
    parser = ToolArgumentParser(prog=prog, description=description, epilog=epilog,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"{prog} (qdmesh) {__version__}")
    add_connection_options(parser)
    return parser


def positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type: ``kind`` (int, float) of the text, which must be greater than 0."""
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be greater than 0: {text!r}")
        return value
    return parse


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    conn = parser.add_argument_group("connection options")
    conn.add_argument("-b", "--bus", metavar="URL", default=DEFAULT_URL,
                      help="router to connect to: host[:port] or amqp[s]://[user:password@]host[:port] "
                           f"(default {DEFAULT_URL})")
    conn.add_argument("-r", "--router", metavar="ROUTER-ID",
                      help="manage the router with this id in the network, through the one connected to")
    conn.add_argument("-d", "--edge-router", metavar="EDGE-ROUTER-ID",
                      help="manage the edge router with this id, through the one connected to (its "
                           "interior router, or any router of the network)")
    conn.add_argument("-t", "--timeout", metavar="SECS", type=positive(float), default=DEFAULT_TIMEOUT,
                      help="seconds to wait for the connection and for each reply "
                           f"(default {DEFAULT_TIMEOUT:g})")
    sec = parser.add_argument_group("security options")
    sec.add_argument("--sasl-mechanisms", metavar="MECHS",
                     help="allowed SASL mechanisms, space separated (default: any the router offers)")
    sec.add_argument("--sasl-username", metavar="USER", help="SASL user name")
    sec.add_argument("--sasl-password", metavar="PASSWORD", help="SASL password")
    sec.add_argument("--sasl-password-file", metavar="FILE", help="read the SASL password from FILE")
    sec.add_argument("--ssl-certificate", metavar="FILE", help="client certificate (PEM) for TLS")
    sec.add_argument("--ssl-key", metavar="FILE", help="private key (PEM) of the client certificate")
    sec.add_argument("--ssl-trustfile", metavar="FILE",
                     help="CA certificates (PEM) that the router's certificate must be signed by")
    sec.add_argument("--ssl-password", metavar="PASSWORD", help="password of the private key")


def sasl_password(args: argparse.Namespace) -> str | None:
    """--sasl-password, or the first line of --sasl-password-file."""
    if not args.sasl_password_file:
        return args.sasl_password
    try:
        with open(args.sasl_password_file, encoding="utf-8") as f:
            return f.readline().rstrip("\r\n")
    except OSError as e:
        raise UsageError(f"cannot read --sasl-password-file: {e.strerror or e}") from None


def client_from_args(args: argparse.Namespace, prog: str) -> ManagementClient:
    return ManagementClient(
        args.bus, timeout=args.timeout, router=args.router, edge_router=getattr(args, "edge_router", None),
        sasl_mechanisms=args.sasl_mechanisms, username=args.sasl_username, password=sasl_password(args),
        ssl_certificate=args.ssl_certificate, ssl_key=args.ssl_key, ssl_trustfile=args.ssl_trustfile,
        ssl_password=args.ssl_password, container_id=f"{prog}-{uuid.uuid4().hex[:12]}",
    )


def run_tool(prog: str, body: Callable[[], int]) -> int:
    """Run a command's body; any failure becomes one ``PROG: error: ...`` line and exit 1 (2 for usage)."""
    try:
        return body()
    except UsageError as e:
        _error(prog, f"{e} (see {prog} --help)")
        return 2
    except ManagementError as e:
        _error(prog, str(e))
        return 1
    except KeyboardInterrupt:
        _error(prog, "interrupted")
        return 130
    except BrokenPipeError:
        # `qdstat -l | head`: the reader left; nothing more to say.
        return 0


def _error(prog: str, message: str) -> None:
    sys.stderr.write(f"{prog}: error: {message}\n")
    sys.stderr.flush()


def write_out(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


def argv_or_default(argv: Sequence[str] | None) -> List[str]:
    return list(sys.argv[1:] if argv is None else argv)
