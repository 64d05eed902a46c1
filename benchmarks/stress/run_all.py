"""Run every stress scenario; print acknowledged vs stored; exit 1 on any loss or corruption.

    make stress
    .venv/bin/python -m benchmarks.stress [--kills 100] [--trials 20] [--processes 8]
        [--adds 100] [--headroom-curated B] [--headroom-session B] [--full-count N]
        [--only NAME ...] [--seed N] [--workdir DIR] [--json PATH]
    .venv/bin/python benchmarks/stress/run_all.py ...      (the same, as a script)

Not timed tests: the figures are counts. Writes benchmarks/results/stress.json (or --json).
See docs/stress.md for what each scenario does and what the columns mean.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks._report import print_table, write_json
from benchmarks.stress._common import Outcome
from benchmarks.stress.scenarios import concurrent_adds, disk_full, first_open, kill_loop

Scenario = Callable[[Path, argparse.Namespace, random.Random], Outcome]

SCENARIOS: dict[str, Scenario] = {
    "concurrent-adds": lambda base, a, rng: concurrent_adds(base, a.processes, a.adds),
    "kill-curated": lambda base, a, rng: kill_loop(base, "curated", a.kills, rng),
    "kill-session": lambda base, a, rng: kill_loop(base, "session", a.kills, rng),
    "first-open": lambda base, a, rng: first_open(base, a.processes, a.trials),
    "disk-full-curated": lambda base, a, rng: disk_full(
        base, "curated", a.headroom_curated, a.full_count
    ),
    "disk-full-session": lambda base, a, rng: disk_full(
        base, "session", a.headroom_session, a.full_count
    ),
}
"""Scenario name -> runner (``--only`` takes these names)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.stress",
        description=(__doc__ or "").splitlines()[0],
    )
    count = _bounded(1, 100_000)
    parser.add_argument("--kills", type=count, default=100, help="SIGKILLs per kill loop")
    parser.add_argument("--trials", type=count, default=20, help="first-open trials")
    parser.add_argument("--processes", type=_bounded(2, 64), default=8, help="concurrent writers")
    parser.add_argument("--adds", type=count, default=100, help="curated adds per process")
    size = _bounded(1024, 1 << 30)
    parser.add_argument(
        "--headroom-curated", type=size, default=32 * 1024,
        help="bytes MEMORY.md may grow in disk-full-curated",
    )
    parser.add_argument(
        "--headroom-session", type=size, default=1024 * 1024,
        help="bytes each session-store file may grow in disk-full-session",
    )
    parser.add_argument(
        "--full-count", type=count, default=3000, help="writes a disk-full writer attempts"
    )
    parser.add_argument("--only", nargs="+", choices=sorted(SCENARIOS), help="run only these")
    parser.add_argument("--seed", type=int, default=None, help="seed for kill timing")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the homes here")
    parser.add_argument("--json", type=Path, default=None, help="write the report here")
    return parser


def _bounded(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range [{low}, {high}]")
        return value

    return parse


def run(args: argparse.Namespace, base: Path) -> list[Outcome]:
    """Run the selected scenarios in ``base``; print each row as it finishes."""
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    print(f"stress: seed {seed}, homes under {base}", flush=True)
    outcomes = []
    for name in args.only or list(SCENARIOS):
        outcome = SCENARIOS[name](base, args, rng)
        outcomes.append(outcome)
        row = outcome.row()
        print(
            f"  {row['result']:4}  {name}: acknowledged {row['acknowledged']}, stored "
            f"{row['stored']}, lost {row['lost']}, corrupt {row['corrupt']}, "
            f"errors {row['errors']} ({row['seconds']} s)",
            flush=True,
        )
        for note in outcome.notes:
            print(f"        - {note}", flush=True)
    return outcomes


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    args = _parser().parse_args(argv)
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        outcomes = run(args, args.workdir.resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="memoryport-stress-") as tmp:
            outcomes = run(args, Path(tmp))
    print_table("stress: acknowledged vs stored", [o.row() for o in outcomes])
    payload = {"scenarios": [o.to_json() for o in outcomes], "params": _params(args)}
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=2, ensure_ascii=False))
        print(f"\nwrote {args.json}")
    else:
        print(f"\nwrote {write_json('stress', payload)}")
    failed = [o.scenario for o in outcomes if not o.ok]
    if failed:
        print("FAILED: " + "; ".join(failed))
        return 1
    print("all scenarios: 0 lost, 0 corrupt")
    return 0


def _params(args: argparse.Namespace) -> dict[str, object]:
    keys = (
        "kills", "trials", "processes", "adds", "headroom_curated", "headroom_session",
        "full_count", "only", "seed",
    )
    return {key: getattr(args, key) for key in keys}


if __name__ == "__main__":
    sys.exit(main())
