#!/usr/bin/env python3
"""The C router's own system tests (qpid-dispatch 1.19.0, tests/system_tests_*.py) against qdmesh.

A measurement, not a CI test: each chosen module runs under Python's unittest with its own
harness (tests/system_test.py), with ``qdrouterd`` on PATH resolving to this checkout's router
(or, with ``--router c``, to the C router, the reference run where every test passes) and
``qdstat``/``qdmanage`` to the C router's own tools. Prints a markdown table per module
(passed/total) and every failure with the first line of its reason; ``--json`` keeps it all.

    python bench/upstream_system_tests.py --source qpid-dispatch-1.19.0.tar.gz
    python bench/upstream_system_tests.py --source /src/qpid-dispatch-1.19.0 --modules drain,qdstat
    python bench/upstream_system_tests.py --source ... --router c      # the reference run

``--source`` is the qpid-dispatch 1.19.0 source release (a folder or its archive) with its
``tests/`` folder; the archive in the shared peers folder is built without it. The tests and
the tools run under Debian's /usr/bin/python3 with python3-qpid-proton (as the C router's tools
do, .ci/setup.d/25-qdrouterd-c.sh); the C router's Python packages (qpid_dispatch,
qpid_dispatch_internal) come from its install prefix. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Dict, List

REPO_DIR = Path(__file__).resolve().parent.parent
C_PREFIX = Path(os.environ.get("QDR_PREFIX", str(Path.home() / ".cache" / "qdr-1.19.0")))
TEST_PYTHON = "/usr/bin/python3"
MODULES = ("one_router", "management", "qdmanage", "qdstat", "two_routers", "link_routes",
           "autolinks", "policy", "multicast", "distribution", "drain", "dynamic_terminus",
           "default_distribution")

# Runs one module's tests in the harness's process and writes one JSON line per test: its id,
# its outcome and the reason's last line (an assertion's message or an exception's text).
DRIVER = r'''
import json, sys, traceback, unittest
out = open(sys.argv[2], "w")
def record(test, outcome, err=None):
    reason = ""
    if err is not None:
        lines = "".join(traceback.format_exception(*err)).strip().splitlines()
        reason = lines[-1] if lines else ""
    out.write(json.dumps({"test": test.id(), "outcome": outcome, "reason": reason[:400]}) + "\n")
    out.flush()
class Result(unittest.TextTestResult):
    def addSuccess(self, test):
        super().addSuccess(test); record(test, "passed")
    def addFailure(self, test, err):
        super().addFailure(test, err); record(test, "failed", err)
    def addError(self, test, err):
        super().addError(test, err); record(test, "error", err)
    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        out.write(json.dumps({"test": test.id(), "outcome": "skipped", "reason": str(reason)[:400]}) + "\n")
    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err); record(test, "passed")
    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test); record(test, "failed")
suite = unittest.defaultTestLoader.loadTestsFromName(sys.argv[1])
unittest.TextTestRunner(resultclass=Result, verbosity=2).run(suite)
'''


def unpack(source: Path, scratch: Path) -> Path:
    """The tests/ folder of the source release (unpacked from an archive into scratch)."""
    if source.is_file():
        with tarfile.open(source) as archive:
            members = [m for m in archive.getmembers() if "/tests/" in m.name or m.name.endswith("/tests")]
            archive.extractall(scratch, members=members)
        found = sorted(scratch.glob("*/tests"))
        tests = found[0] if found else scratch / "missing"
    else:
        tests = source / "tests" if (source / "tests").is_dir() else source
    if not (tests / "system_test.py").is_file():
        raise SystemExit(f"{source}: no tests/system_test.py (the release's test suite is needed; "
                         "the shared peers archive is built without it)")
    return tests


def wrappers(bindir: Path, router: str, python: str) -> None:
    """qdrouterd, qdstat and qdmanage as the tests find them on PATH."""
    scripts = {
        "qdstat": f'exec "{C_PREFIX}/bin/qdstat-c" "$@"',
        "qdmanage": f'exec "{C_PREFIX}/bin/qdmanage-c" "$@"',
    }
    if router == "c":
        scripts["qdrouterd"] = f'exec "{C_PREFIX}/bin/qdrouterd-c" "$@"'
    else:
        scripts["qdrouterd"] = f'PYTHONPATH="{REPO_DIR}/router" exec "{python}" -m qdrouter "$@"'
    for name, body in scripts.items():
        path = bindir / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)


def run_module(module: str, tests: Path, bindir: Path, workdir: Path, timeout: float) -> List[Dict[str, str]]:
    """Every test of system_tests_<module>, each as {test, outcome, reason}."""
    workdir.mkdir(parents=True, exist_ok=True)
    driver = workdir / "driver.py"
    driver.write_text(DRIVER)
    results = workdir / "results.jsonl"
    env = dict(os.environ)
    env.update({
        "PATH": f"{bindir}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([str(tests), str(C_PREFIX / "python")]),
        "SOURCE_DIR": str(tests.parent), "BUILD_DIR": str(workdir), "QPID_DISPATCH_HOME": str(tests.parent),
        "QPID_DISPATCH_RUNNER": "",
    })
    with open(workdir / "unittest.log", "w") as log:
        proc = subprocess.Popen([TEST_PYTHON, str(driver), f"system_tests_{module}", str(results)],
                                cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    rows = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    if proc.returncode not in (0, 1) and not rows:
        rows.append({"test": f"system_tests_{module}", "outcome": "error",
                     "reason": f"did not run (exit {proc.returncode}; see {workdir}/unittest.log)"})
    return rows


def report(by_module: Dict[str, List[Dict[str, str]]], router: str) -> str:
    lines = [f"| module ({router}) | passed | total | skipped |", "|---|---:|---:|---:|"]
    all_passed = all_total = 0
    for module, rows in by_module.items():
        ran = [r for r in rows if r["outcome"] != "skipped"]
        passed = sum(1 for r in ran if r["outcome"] == "passed")
        all_passed += passed
        all_total += len(ran)
        lines.append(f"| {module} | {passed} | {len(ran)} | {len(rows) - len(ran)} |")
    share = f"{100 * all_passed / all_total:.0f}%" if all_total else "-"
    lines.append(f"| **all** | **{all_passed}** | **{all_total}** | ({share}) |")
    lines.append("")
    lines.append("Failures:")
    for rows in by_module.values():
        for r in rows:
            if r["outcome"] in ("failed", "error"):
                lines.append(f"- {r['test']}: {r['outcome']}: {r['reason']}")
    return "\n".join(lines)


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, required=True,
                        help="the qpid-dispatch 1.19.0 source release (folder or archive) with tests/")
    parser.add_argument("--router", choices=("qdmesh", "c"), default="qdmesh")
    parser.add_argument("--modules", default=",".join(MODULES),
                        help="comma-separated system_tests_<name> modules (default: %(default)s)")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs qdmesh's router")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds a module may take")
    parser.add_argument("--workdir", type=Path, help="where the tests write (default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="write every test's outcome here")
    args = parser.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="qdm-upstream-"))
    work.mkdir(parents=True, exist_ok=True)
    tests = unpack(args.source.resolve(), work / "src")
    bindir = work / "bin"
    bindir.mkdir(exist_ok=True)
    wrappers(bindir, args.router, args.python)
    by_module: Dict[str, List[Dict[str, str]]] = {}
    for module in [m.strip() for m in args.modules.split(",") if m.strip()]:
        started = time.monotonic()
        by_module[module] = run_module(module, tests, bindir, work / module, args.timeout)
        passed = sum(1 for r in by_module[module] if r["outcome"] == "passed")
        print(f"{module}: {passed}/{len(by_module[module])} in {time.monotonic() - started:.0f} s",
              file=sys.stderr, flush=True)
    print(report(by_module, args.router))
    if args.json:
        args.json.write_text(json.dumps(by_module, indent=1))
    print(f"(logs and each test's router output under {work})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
