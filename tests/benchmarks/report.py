"""Figures, their targets from issue 7, the printed table and the JSON file."""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

# Table order: the numbering.
SECTIONS = (
    "parse floor",
    "full index",
    "no-op re-index",
    "freshness",
    "attachments",
    "subscriptions",
    "editing",
    "integrity",
    "query latency",
    "PostgreSQL beside SQLite",
    "search ranking",
    "answer size",
    "tool list",
    "clients over stdio",
    "HTTP under concurrency",
    "memory and size",
    "background",
    "scaling",
    "dashboard",
    "semantic search",
    "workers",
    "start-up",
)


@dataclass(frozen=True)
class Target:
    """A bound a figure must meet: `value <= bound` or `value >= bound`."""

    op: Literal["<=", ">="]
    bound: float
    text: str  # as the issue states it, e.g. "≤ 300 ms"

    def met(self, value: float) -> bool:
        return value <= self.bound if self.op == "<=" else value >= self.bound


@dataclass(frozen=True)
class Figure:
    """One row of the table. `value` is what the target judges; `shown` is what is printed."""

    section: str
    name: str
    value: float
    unit: str
    shown: str
    target: Target | None = None
    data: dict[str, Any] = field(default_factory=dict)  # raw numbers, kept in the JSON only

    @property
    def status(self) -> str:
        if self.target is None:
            return ""
        return "PASS" if self.target.met(self.value) else "MISS"


def percentile(samples: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (p95 of 20 samples is the 19th smallest)."""
    ordered = sorted(samples)
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


def latency_figure(
    section: str, name: str, seconds: Sequence[float], target: Target | None
) -> Figure:
    """p50 and p95 in milliseconds; the target judges p95."""
    p50, p95 = percentile(seconds, 50) * 1000, percentile(seconds, 95) * 1000
    return Figure(
        section,
        name,
        p95,
        "ms",
        f"p50 {_ms(p50)} · p95 {_ms(p95)} ms (n={len(seconds)})",
        target,
        {
            "p50_ms": p50,
            "p95_ms": p95,
            "mean_ms": statistics.fmean(seconds) * 1000,
            "max_ms": max(seconds) * 1000,
            "n": len(seconds),
        },
    )


def _ms(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.0f}"


def render_table(figures: Sequence[Figure]) -> str:
    """A markdown table, ordered by section: readable in a terminal, pasteable in the README."""
    ordered = sorted(figures, key=lambda f: SECTIONS.index(f.section))
    rows = [("figure", "result", "target", "")]
    for fig in ordered:
        rows.append(
            (
                f"{fig.section}: {fig.name}",
                fig.shown,
                fig.target.text if fig.target else "",
                fig.status,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |"
        for row in rows
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    """The machine and software the figures were measured on."""
    cpu = _proc_field("/proc/cpuinfo", "model name")
    mem_kb = _proc_field("/proc/meminfo", "MemTotal")
    return {
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "cpu_model": cpu,
        "memory_gib": round(int(mem_kb.split()[0]) / 1024**2, 1) if mem_kb else None,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "commit": _git_commit(),
    }


def machine_line(info: dict[str, Any]) -> str:
    return (
        f"{info['cpus']} CPUs ({info['cpu_model']}), {info['memory_gib']} GiB RAM, "
        f"{info['platform']}, Python {info['python']}, SQLite {info['sqlite']}"
    )


def _proc_field(path: str, name: str) -> str | None:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip()
    return None


def _git_commit() -> str | None:
    """The checked-out commit, read-only; None outside a repository or before the first commit."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def write_json(path: Path, figures: Sequence[Figure], meta: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{**asdict(f), "status": f.status} for f in figures]
    path.write_text(json.dumps({**meta, "figures": rows}, indent=1) + "\n", encoding="utf-8")
