"""`make bench`'s dashboard group, run small on every `make test`: every page it times
answers 200 on a generated vault with a history of runs (timings are the bench's business)."""

from __future__ import annotations

from pathlib import Path

from tests.benchmarks import dashboard
from tests.benchmarks.vaultgen import generate_vault
from tests.dashboard.server import fill_history, serve_dashboard


def test_every_page_the_bench_times_answers(tmp_path: Path) -> None:
    facts = generate_vault(tmp_path / "vault", 60)
    with serve_dashboard(tmp_path / "vault", builtins=False) as served:
        fill_history(served.app, 200)
        measured = dashboard.measure(served, facts.hub, calls=1)
    assert len(measured) == 14
    assert all(len(times) == 1 for times in measured.values())
