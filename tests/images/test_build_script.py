"""images/build.sh's command line: help, and mistakes refused with one clear line before any
build starts (these never reach Docker or buildah)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import List

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "images" / "build.sh"


def build_sh(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(BUILD), *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_help_names_every_option_and_target() -> None:
    result = build_sh("--help")
    assert result.returncode == 0
    for word in ("--base", "--engine", "--no-save", "--push", "router", "router-pypy", "operator",
                 "e2e-broker", "debootstrap"):
        assert word in result.stdout, word


@pytest.mark.parametrize("args, says", [
    (["--bogus"], "build.sh: unknown argument: --bogus (see --help)"),
    (["broker"], "build.sh: unknown argument: broker (see --help)"),
    (["--engine", "rkt", "router"], "build.sh: unknown --engine: rkt (docker or buildah)"),
    (["--push"], "build.sh: --push needs REGISTRY/PREFIX"),
    (["--push", "", "router"], "build.sh: --push needs REGISTRY/PREFIX"),
])
def test_mistakes_are_one_line_and_exit_2(args: List[str], says: str) -> None:
    result = build_sh(*args)
    assert result.returncode == 2
    assert result.stderr.strip() == says
