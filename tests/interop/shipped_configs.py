"""The configs the C router's source ships (its ``etc/qdrouterd.conf`` and every config example
in its user guide, ``docs/books``), read straight from the source archive in the shared peers
folder, and the C router's own verdict on each: its config loader (``qpid_dispatch_internal``'s
``Config``, the code ``qdrouterd`` runs at start-up) run under the Python the C build uses."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List

from tests.interop.cpeer import require_c_router
from tests.prerequisites import require

_ARCHIVE = "qpid-dispatch-1.19.0.tar.gz"
_REPO = Path(__file__).resolve().parents[2]
_SECTION_START = re.compile(r"^\s*[A-Za-z]+\s*\{\s*(//.*)?$", re.M)
_WHY = f"the C router's source archive {_ARCHIVE} (in ../shared/peers, or set $QDMESH_PEERS)"
_CALLOUT = re.compile(r"[ \t]*//\s*<\d+>")


@dataclass(frozen=True)
class ShippedConfig:
    #: Where it comes from: a path in the archive, with "#N" for the N-th listing of a guide page.
    origin: str
    #: As shipped (a guide's listing may be a fragment).
    text: str

    @property
    def loadable_text(self) -> str:
        """The listing as a user's whole file would hold it: the guide's callout marks and
        "..." elisions removed, a router section added to fragments that lack one (both loaders
        need exactly one), and an empty sslProfile for each profile a fragment names but does
        not define (the guide defines them on another page)."""
        text = _CALLOUT.sub("", self.text)
        text = "\n".join(line for line in text.splitlines() if line.strip() != "...")
        if not re.search(r"^\s*router\s*\{", text, re.M):
            text = "router {\n    mode: interior\n    id: guide\n}\n" + text
        defined = set(re.findall(r"^\s*sslProfile\s*\{[^}]*?\bname:\s*(\S+)", text, re.M | re.S))
        for missing in sorted(set(re.findall(r"^\s*sslProfile:\s*(\S+)", text, re.M)) - defined):
            text += f"\nsslProfile {{\n    name: {missing}\n}}\n"
        return text


def peers_folder() -> Path | None:
    """The shared peers folder, found as .ci/setup.d/25-qdrouterd-c.sh finds it."""
    for candidate in (os.environ.get("QDMESH_PEERS"), str(_REPO.parent / "shared" / "peers"),
                      "/work/shared/peers"):
        if candidate and (Path(candidate) / _ARCHIVE).is_file():
            return Path(candidate)
    return None


def _listings(page: str) -> Iterator[str]:
    """The text of each ``----``-delimited listing of an AsciiDoc page."""
    current: List[str] | None = None
    for line in page.splitlines():
        if line.strip() == "----":
            if current is None:
                current = []
            else:
                yield "\n".join(current)
                current = None
        elif current is not None:
            current.append(line)


def shipped_configs() -> List[ShippedConfig]:
    peers = peers_folder()
    require(peers is not None, _WHY)
    assert peers is not None
    found: List[ShippedConfig] = []
    with tarfile.open(peers / _ARCHIVE) as archive:
        for member in sorted(archive.getmembers(), key=lambda m: m.name):
            path = member.name.split("/", 1)[-1]
            if not member.isfile():
                continue
            if path == "etc/qdrouterd.conf":
                found.append(ShippedConfig(path, _read(archive, member)))
            elif path.startswith("docs/books/") and path.endswith(".adoc"):
                for number, listing in enumerate(_listings(_read(archive, member))):
                    if _SECTION_START.search(listing) and not listing.lstrip().startswith("$"):
                        found.append(ShippedConfig(f"{path}#{number}", listing))
    return found


def c_router_schema() -> Dict[str, object]:
    """The management schema the C router 1.19.0 validates configs with, from its source."""
    peers = peers_folder()
    require(peers is not None, _WHY)
    assert peers is not None
    with tarfile.open(peers / _ARCHIVE) as archive:
        for member in archive.getmembers():
            if member.name.endswith("python/qpid_dispatch/management/qdrouter.json"):
                schema: Dict[str, object] = json.loads(_read(archive, member))
                return schema
    raise AssertionError(f"{_ARCHIVE} holds no qdrouter.json")


def _read(archive: tarfile.TarFile, member: tarfile.TarInfo) -> str:
    stream = archive.extractfile(member)
    assert stream is not None
    return stream.read().decode("utf-8")


_C_LOADER = """
import json, sys
from qpid_dispatch_internal.management import config as loader
# Outside the router its log adapter is absent, and the parse-failure path names LOG_ERROR.
loader.LOG_ERROR = loader.LOG_WARNING = 0
verdicts = []
for path in sys.argv[1:]:
    try:
        loader.Config(path)
        verdicts.append(None)
    except Exception as error:
        verdicts.append(str(error).split(": ", 1)[-1])
print(json.dumps(verdicts))
"""


def c_router_verdicts(files: List[Path]) -> Dict[Path, str | None]:
    """For each file, None if the C router's loader accepts it, else its error message."""
    binary = require_c_router()
    python_home = binary.parent.parent / "python"
    result = subprocess.run(["/usr/bin/python3", "-c", _C_LOADER, *map(str, files)],
                            env={**os.environ, "PYTHONPATH": str(python_home)},
                            capture_output=True, text=True, timeout=120, check=True)
    return dict(zip(files, json.loads(result.stdout)))
