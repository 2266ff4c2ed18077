"""`make bench`: generate vaults, measure, print one table, write it as JSON.

    python -m tests.benchmarks                       # 1,000 and 10,000 notes, ~5 minutes
    python -m tests.benchmarks --notes 100000        # adds 100,000 (~10 minutes more)
    python -m tests.benchmarks --quick               # a smoke run on 1,000 notes, ~1 minute
    python -m tests.benchmarks --postgres            # adds PostgreSQL beside SQLite (~5 min)
    python -m tests.benchmarks --postgres --only postgres   # only that comparison
    python -m tests.benchmarks --out bench-results/latest.json --keep --workdir /tmp/wb
    make bench ARGS="--quick"

Targets are judged at the reference size (10,000 notes; 1,000 with --quick, where the figures
are only a smoke test of the bench itself).

Every figure group is a function `run(ctx) -> list[Figure]` in its own module (`GROUPS`); a
new tool's latency is one line in `queries.TOOL_CASES`. Exit status 0 even when a target is
missed (the table says so); 1 when a measurement itself failed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from tests.benchmarks import (
    answers,
    attachments,
    background,
    bases,
    clients,
    concurrency,
    dashboard,
    editing,
    freshness,
    indexing,
    integrity,
    postgres,
    queries,
    ranking,
    semantic,
    startup,
    subscriptions,
    surface,
    task_queries,
    tool_list,
    workers,
)
from tests.benchmarks.context import BenchContext
from tests.benchmarks.report import Figure, machine, machine_line, render_table, write_json
from tests.benchmarks.vaultgen import generate_vault

REFERENCE = 10_000
QUICK_REFERENCE = 1_000
Group = Callable[[BenchContext], list[Figure]]
GROUPS: dict[str, Group] = {
    "indexing": indexing.run,
    "queries": queries.run,
    "task_queries": task_queries.run,
    "bases": bases.run,
    "postgres": postgres.run,  # only with --postgres (or --only postgres): starts a server
    "clients": clients.run,
    "freshness": freshness.run,
    "editing": editing.run,
    "integrity": integrity.run,
    "dashboard": dashboard.run,
    "semantic": semantic.run,
    "ranking": ranking.run,
    "answers": answers.run,
    "surface": surface.run,
    "tool_list": tool_list.run,
    "subscriptions": subscriptions.run,
    "concurrency": concurrency.run,
    "workers": workers.run,  # PostgreSQL: started here, as the tests start it
    "attachments": attachments.run,  # 1,000 PDFs extracting beside note freshness
    "startup": startup.run,  # spawn → tools/list against a bare SDK server; weaver --help
    "background": background.run,  # idle CPU and RSS at rest: 5 minutes of a daemon doing nothing
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.benchmarks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--notes",
        action="append",
        default=[],
        metavar="N[,N...]",
        help="vault sizes besides the reference size (repeatable)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="judge targets at 1,000 notes, fewer runs and trials"
    )
    parser.add_argument("--out", type=Path, default=Path("bench-results/latest.json"))
    parser.add_argument("--workdir", type=Path, help="where vaults go (default: a temp folder)")
    parser.add_argument("--keep", action="store_true", help="keep the vaults afterwards")
    parser.add_argument(
        "--only",
        choices=sorted(GROUPS),
        action="append",
        help="run only these figure groups (repeatable)",
    )
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="also measure the index and the read tools on a PostgreSQL cache, beside SQLite",
    )
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args(argv)


def build_context(args: argparse.Namespace, workdir: Path) -> BenchContext:
    reference = QUICK_REFERENCE if args.quick else REFERENCE
    extra = {int(n.replace("_", "")) for v in args.notes for n in v.split(",") if n}
    sizes = {QUICK_REFERENCE, reference, *extra}
    ctx = BenchContext(
        workdir=workdir,
        sizes=tuple(sorted(sizes)),
        reference=reference,
        quick=args.quick,
        seed=args.seed,
    )
    if args.quick:
        ctx.index_runs, ctx.floor_runs, ctx.trials, ctx.calls = 1, 2, 20, 30
    return ctx


def generate(ctx: BenchContext) -> None:
    for notes in ctx.sizes:
        if ctx.facts_file(notes).exists() and ctx.facts(notes).seed == ctx.seed:
            continue  # a kept workdir from an earlier run: the same seed gives the same vault
        shutil.rmtree(ctx.vault(notes), ignore_errors=True)
        started = time.perf_counter()
        facts = generate_vault(ctx.vault(notes), notes, ctx.seed)
        facts.write(ctx.facts_file(notes))
        print(
            f"  generated {notes:,} notes ({facts.total_bytes / 1e6:.0f} MB, {facts.links:,} "
            f"links) in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )


def wanted(args: argparse.Namespace, name: str) -> bool:
    """Whether group `name` runs: every group unless `--only` names some; `postgres` only when
    asked for, by `--postgres` or by name."""
    if args.only:
        return name in args.only or (name == "postgres" and args.postgres)
    return name != "postgres" or args.postgres


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="weaver-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    ctx = build_context(args, workdir)
    started = time.perf_counter()
    info = machine()
    print(
        f"weaver bench: {', '.join(f'{n:,}' for n in ctx.sizes)} notes in {workdir}\n"
        f"  {machine_line(info)}",
        file=sys.stderr,
    )
    figures: list[Figure] = []
    failed: list[str] = []
    try:
        generate(ctx)
        for name, group in GROUPS.items():
            if not wanted(args, name):
                continue
            print(f"- {name}", file=sys.stderr)
            try:
                figures += group(ctx)
            except Exception as exc:  # report the other groups' figures all the same
                print(f"  {name} failed: {exc}", file=sys.stderr)
                failed.append(name)
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.perf_counter() - started
    print(render_table(figures))
    print(f"\nMachine: {machine_line(info)}. Bench took {elapsed:.0f} s.")
    meta = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": info,
        "sizes": ctx.sizes,
        "reference": ctx.reference,
        "quick": ctx.quick,
        "seconds": round(elapsed, 1),
        "failed_groups": failed,
    }
    write_json(args.out, figures, meta)
    print(f"Written to {args.out}", file=sys.stderr)
    if failed:
        print(f"FAILED to measure: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
