"""The million-case fuzz run: the config parser, the management request decoder and the
policy rule parser, each fed seeded mutations of valid inputs and raw garbage.

    python bench/fuzz/run_fuzz.py --cases 1000000 [--target config|management|policy] [--seed N]

Prints, per target, cases run, how many were accepted vs. refused with a clear error, the
slowest case, and any failure (a crash: an exception other than the documented error, an
empty error, or a case slower than --slow seconds) with the input that caused it."""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "router"))

from bench.fuzz import mutate, targets

Case = Callable[[random.Random], Tuple[Callable[[Any], int], Any]]


def config_case(rng: random.Random) -> Tuple[Callable[[Any], int], Any]:
    if rng.random() < 0.1:
        return targets.check_config, "".join(chr(rng.randrange(1, 0x800)) for _ in range(rng.randrange(200)))
    seed = rng.choice(targets.CONFIG_SEEDS)
    return targets.check_config, mutate.mutate_text(rng, seed, rng.randrange(1, 8))


_MANAGEMENT_SEEDS = targets.management_seeds()


def management_case(rng: random.Random) -> Tuple[Callable[[Any], int], Any]:
    if rng.random() < 0.1:
        return targets.check_management, bytes(rng.randrange(256) for _ in range(rng.randrange(300)))
    seed = rng.choice(_MANAGEMENT_SEEDS)
    return targets.check_management, mutate.mutate_bytes(rng, seed, rng.randrange(1, 6))


def policy_case(rng: random.Random) -> Tuple[Callable[[Any], int], Any]:
    choice = rng.random()
    if choice < 0.15:
        return targets.check_policy, mutate.random_json(rng)
    if choice < 0.3:
        rules = (mutate.random_json(rng), mutate.random_json(rng))
        return (lambda pair: targets.check_rules(*pair)), rules
    return targets.check_policy, mutate.mutate_json(rng, rng.choice(targets.POLICY_SEEDS))


CASES: Dict[str, Case] = {"config": config_case, "management": management_case, "policy": policy_case}


def run(name: str, cases: int, seed: int, slow: float) -> Dict[str, Any]:
    rng = random.Random(seed)
    make = CASES[name]
    accepted = refused = 0
    failures: List[str] = []
    slowest = 0.0
    started = time.perf_counter()
    for _ in range(cases):
        check, value = make(rng)
        before = time.perf_counter()
        try:
            if check(value):
                accepted += 1
            else:
                refused += 1
        except targets.FuzzFailure as failure:
            if len(failures) < 20:
                failures.append(f"{failure} <- {value!r:.300}")
        elapsed = time.perf_counter() - before
        if elapsed > slowest:
            slowest = elapsed
        if elapsed > slow and len(failures) < 20:
            failures.append(f"slow case ({elapsed:.2f} s) <- {value!r:.300}")
    return {"target": name, "cases": cases, "accepted": accepted, "refused": refused,
            "failures": failures, "slowest_ms": slowest * 1000, "seconds": time.perf_counter() - started}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1_000_000, help="cases per target")
    parser.add_argument("--target", choices=sorted(CASES), action="append", help="default: all three")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--slow", type=float, default=1.0, help="seconds after which a case counts as a hang")
    args = parser.parse_args()
    status = 0
    for name in args.target or sorted(CASES):
        result = run(name, args.cases, args.seed, args.slow)
        print(f"{result['target']:<11} {result['cases']:>9,} cases in {result['seconds']:8.1f} s: "
              f"{result['accepted']:>9,} accepted, {result['refused']:>9,} refused with an error, "
              f"slowest {result['slowest_ms']:.1f} ms, {len(result['failures'])} failures", flush=True)
        for failure in result["failures"]:
            print(f"    FAILURE {failure}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
