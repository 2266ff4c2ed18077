"""What every figure group gets: where the vaults are, how big, how hard to try."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.benchmarks.vaultgen import VaultFacts


@dataclass
class BenchContext:
    workdir: Path
    sizes: tuple[int, ...]  # vault sizes, ascending; each is generated and fully indexed
    reference: int  # the size the no-op, freshness, query and memory targets are judged at
    quick: bool
    seed: int = 7
    index_runs: int = 2  # cold index runs per size, in fresh processes; the fastest counts
    floor_runs: int = 3  # parse floor passes before each index run; the fastest counts
    trials: int = 25  # freshness trials per kind of change (the issue asks for at least 20)
    calls: int = 100  # query calls per tool
    results: dict[str, Any] = field(default_factory=dict)  # raw numbers shared between groups

    def vault(self, notes: int) -> Path:
        return self.workdir / f"vault-{notes}"

    def facts_file(self, notes: int) -> Path:
        return self.workdir / f"vault-{notes}.facts.json"

    def facts(self, notes: int) -> VaultFacts:
        return VaultFacts.read(self.facts_file(notes))
