"""`weaver task done|cancel|reopen|toggle|set PATH LINE|^BLOCK`, in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import write_files
from weaver.cli import main

NOTE = "# Home\n- [ ] water plants 🔁 every 3 days ⏳ 2026-11-28\n- [ ] call Ana ^ana\n"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_files(tmp_path / "vault", {"Home.md": NOTE})


def test_task_done_writes_the_next_occurrence(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--vault", str(vault), "task", "done", "Home.md", "2", "--date", "2026-11-29"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Home.md:3: - [ ] water plants" in out and "(next occurrence)" in out
    assert (vault / "Home.md").read_text().splitlines()[1:3] == [
        "- [ ] water plants 🔁 every 3 days ⏳ 2026-12-01",
        "- [x] water plants 🔁 every 3 days ⏳ 2026-11-28 ✅ 2026-11-29",
    ]


def test_task_set_by_block_id_then_undo(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--vault", str(vault), "task", "set", "Home.md", "^ana", "--due", "2026-12-24"]
    assert main([*args, "--priority", "high", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["after"] == "- [ ] call Ana 📅 2026-12-24 ⏫ ^ana"
    assert (vault / "Home.md").read_text().splitlines()[2] == answer["after"]
    assert main(["--vault", str(vault), "undo", "Home.md"]) == 0
    assert (vault / "Home.md").read_text() == NOTE


def test_a_line_that_reads_otherwise_is_refused(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--vault", str(vault), "task", "reopen", "Home.md", "3", "--expect", "- [x] other"]
    assert main(args) == 1
    assert "line 3 now reads '- [ ] call Ana ^ana'" in capsys.readouterr().err
    assert main(["--vault", str(vault), "task", "cancel", "Home.md", "1"]) == 1
    assert "line 1 is not a task" in capsys.readouterr().err
    assert (vault / "Home.md").read_text() == NOTE
