"""The docs say only what is true: every relative link resolves, every command shown for a
script of this repository or one of qdmesh's commands names a script that exists and options it
has, and no file speaks of how the product was made (development rounds, issue numbers,
commit hashes, the machines it was written on) instead of the product."""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md"), *(REPO / "charts").glob("*/README.md")])

# -- (a) links -------------------------------------------------------------------------------------

_INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_REFERENCE_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)
_FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1\s*$", re.M | re.S)


def _prose(text: str) -> str:
    """The text outside fenced blocks and inline code (where brackets are not links)."""
    return re.sub(r"`[^`\n]*`", "", _FENCE.sub("", text))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@functools.cache
def _anchors(path: Path) -> frozenset:
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", _FENCE.sub("", path.read_text()), re.M)
    return frozenset(_slug(h) for h in headings)


def links() -> Iterator[Tuple[Path, str]]:
    for doc in DOCS:
        prose = _prose(doc.read_text())
        for target in _INLINE_LINK.findall(prose) + _REFERENCE_LINK.findall(prose):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target):  # not http:, mailto: ...
                yield doc, target


def test_every_relative_link_resolves() -> None:
    broken = []
    checked = 0
    for doc, target in links():
        checked += 1
        path_part, _, anchor = target.partition("#")
        path = (doc.parent / path_part).resolve() if path_part else doc
        where = f"{doc.relative_to(REPO)}: {target}"
        if not path.exists():
            broken.append(f"{where} (no such file)")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{where} (no heading #{anchor} in {path.relative_to(REPO)})")
    assert checked > 50, "the link pattern finds the docs' links"
    assert not broken, "broken links:\n" + "\n".join(broken)


# -- (b) commands ----------------------------------------------------------------------------------

# The commands of the qdmesh package (pyproject.toml's [project.scripts]).
def _console_scripts() -> Dict[str, str]:
    text = (REPO / "pyproject.toml").read_text()
    section = text.split("[project.scripts]", 1)[1].split("\n[", 1)[0]
    return dict(re.findall(r'^([\w-]+)\s*=\s*"([\w.:]+)"', section, re.M))


SCRIPTS = _console_scripts()
SUBCOMMANDS = {"qdmesh": ("local", "console")}
_SHELL_BLOCK = re.compile(r"^[ \t]*```(?:sh|bash|shell|console)?[ \t]*\n(.*?)^[ \t]*```\s*$", re.M | re.S)
_REPO_SCRIPT = re.compile(r"^(?:\./)?((?:scripts|images|tests|charts|kubectl|bench|\.ci|docs)/[\w./-]+)$")


def shell_commands(text: str) -> Iterator[List[str]]:
    """Each simple command of the shell blocks, as words (comments, continuations, pipes,
    `&&`, `;` and `$(...)` handled; lines that are not shell are skipped)."""
    for block in _SHELL_BLOCK.findall(text):
        joined = re.sub(r"\\\n", " ", block)
        for line in joined.splitlines():
            line = re.sub(r"^\s*\$\s+", "", line)  # a prompt
            line = re.sub(r"(^|\s)#.*$", "", line)
            for part in re.split(r"&&|\|\||[|;()]|\$\(", line):
                try:
                    words = shlex.split(part)
                except ValueError:
                    continue
                while words and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0])
                                 or words[0] in ("sudo", "env", "exec", "time", "nice", "then", "do")):
                    words = words[1:]
                if words:
                    yield words


def _program(words: List[str]) -> Tuple[str, List[str]] | None:
    """(what the command runs, its arguments) for a script of the repository or a qdmesh
    command, else None."""
    first, rest = words[0], words[1:]
    if first in ("bash", "sh") and rest:
        first, rest = rest[0], rest[1:]
    if first == "kubectl" and rest[:1] == ["qdstat"]:
        return "kubectl-qdstat", rest[1:]
    name = first.rsplit("/", 1)[-1]
    if name in SCRIPTS and (first == name or "/bin/" in first):
        return name, rest
    m = _REPO_SCRIPT.match(first)
    if m and not first.endswith((".md", ".yaml", ".yml", ".json", ".tar", ".tar.gz", ".conf")):
        return m.group(1), rest
    return None


def commands() -> Iterator[Tuple[Path, str, List[str]]]:
    for doc in DOCS:
        for words in shell_commands(doc.read_text()):
            found = _program(words)
            if found:
                yield doc, found[0], found[1]


def _options(args: List[str]) -> List[str]:
    out = []
    for arg in args:
        if arg == "--":
            break
        if re.match(r"^--?[A-Za-z][\w-]*", arg):
            out.append(arg.split("=", 1)[0])
    return out


@functools.cache
def _help(command: str, subcommand: str | None) -> str:
    module, _, function = SCRIPTS[command].partition(":")
    code = (f"import sys; sys.argv[0] = {command!r}; from {module} import {function} as main; "
            "sys.exit(main())")
    sources = [str(REPO / d) for d in ("router", "operator", "telemetry", "kubectl")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*sources, os.environ.get("PYTHONPATH", "")]))
    argv = [sys.executable, "-c", code, *([subcommand] if subcommand else []), "--help"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, f"{command} {subcommand or ''} --help: {done.stderr}"
    return done.stdout


def _short_option_in(option: str, text: str) -> bool:
    """-abc may be -a -b -c, as getopt and argparse read it."""
    if re.search(rf"(^|[\s\[,|]){re.escape(option)}\b", text):
        return True
    return len(option) > 2 and not option.startswith("--") and all(
        re.search(rf"(^|[\s\[,|])-{c}\b", text) for c in option[1:])


def test_every_command_shown_exists_with_the_options_it_uses() -> None:
    wrong = []
    seen = 0
    for doc, program, args in commands():
        seen += 1
        where = f"{doc.relative_to(REPO)}: {program} {' '.join(args)}"
        if program in SCRIPTS:
            sub = args[0] if args and args[0] in SUBCOMMANDS.get(program, ()) else None
            text = _help(program, sub)
        else:
            script = REPO / program
            if not script.exists():
                wrong.append(f"{where}: no such script")
                continue
            if script.is_dir():
                continue
            text = script.read_text(errors="replace")
        missing = [o for o in _options(args) if not _short_option_in(o, text)]
        if missing:
            wrong.append(f"{where}: {program} has no {', '.join(missing)}")
    assert seen > 20, "the command pattern finds the docs' commands"
    assert not wrong, "commands the docs show that would not run:\n" + "\n".join(wrong)


@pytest.mark.parametrize("block, expected", [
    ("```sh\n.venv/bin/qdmesh local --routers 3   # three\n```\n", [["qdmesh", "local", "--routers", "3"]]),
    ("```sh\nFOO=1 bash images/build.sh --push r/p && kubectl qdstat -g \\\n  --mesh m\n```\n",
     [["images/build.sh", "--push", "r/p"], ["kubectl-qdstat", "-g", "--mesh", "m"]]),
    ("```yaml\nqdstat: -b\n```\n", []),
])
def test_commands_are_read_as_a_shell_reads_them(block: str, expected: List[List[str]]) -> None:
    found = [[p, *a] for p, a in (_program(w) or ("", []) for w in shell_commands(block)) if p]
    assert found == expected


# -- (c) the product, not its making -----------------------------------------------------------------

HISTORY = re.compile("|".join([
    r"\bsessions? [0-9]+",                                   # numbered rounds of work
    r"\b(?:an? )?(?:earlier|previous) (?:work )?session\b",
    r"\b(?:development |work )?rounds? [0-9]+\b",
    r"\b(?:issues?|PR|pull request|ticket)s? #?[0-9]+",      # issue numbers
    r"\(#[0-9]+\)",
    r"\bcommits? `?[0-9a-f]{7,40}\b",                        # commit hashes
    r"`(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}`",
    r"\b(?:checked|tried|measured) here\b",                  # the machines it was made on
    r"\bthese (?:2-core )?(?:VMs|machines)\b",
    r"\bnew user's\b",
    r"\bother (?:helpers|engineers)\b",
]), re.I)
SCANNED = ("README.md", "docs", "charts", "router", "operator", "telemetry", "kubectl", "tests")
TEXT_SUFFIXES = {".md", ".py", ".c", ".h", ".yaml", ".yml", ".sh", ".toml", ".tpl", ".txt", ".j2", ".json",
                 ".conf", ".lua", ""}


def scanned_files() -> Iterator[Path]:
    for top in SCANNED:
        base = REPO / top
        for path in ([base] if base.is_file() else sorted(base.rglob("*"))):
            if (path.is_file() and path.suffix in TEXT_SUFFIXES and path != Path(__file__).resolve()
                    and "__pycache__" not in path.parts and ".egg-info" not in str(path)):
                yield path


def history_lines(text: str) -> Iterator[Tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), 1):
        if HISTORY.search(line):
            yield number, line.strip()


def test_no_file_speaks_of_how_it_was_made() -> None:
    found = []
    for path in scanned_files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        found += [f"{path.relative_to(REPO)}:{n}: {line[:120]}" for n, line in history_lines(text)]
    assert not found, ("development history belongs in CHANGELOG.md (and measurements with their date "
                       "in bench/), not here:\n" + "\n".join(found))


# Written in parts, so that a plain grep of the tree for such wording finds only real cases.
@pytest.mark.parametrize("parts", [
    ("measured in sess", "ion 12 (bench/HISTORY.md)"), ("as iss", "ue 31 saw"), ("fixed in #4", "2 (#42)"),
    ("commit `e1f", "3b0c`"), ("as built at `e1f", "3b0c`"), ("Checked ", "here with buildah"),
    ("on these ", "VMs"), ("a new ", "user's machine"), ("as in qdrouterd (an earlier sess", "ion)"),
])
def test_the_history_check_catches(parts: Tuple[str, str]) -> None:
    assert list(history_lines("".join(parts)))


@pytest.mark.parametrize("line", [
    "a session's incoming window", "sessions of one connection", "color: #333", "round-robin over 3 links",
    "rounds of 200,000 messages", "the second round of traffic", "the session's last frame",
    "this session's incoming window",
])
def test_the_history_check_leaves_the_product_alone(line: str) -> None:
    assert not list(history_lines(line))
