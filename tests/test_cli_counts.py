"""A page size below 1 or a negative offset is refused by name, before anything runs: it used
to print a strange page (`weaver tasks --limit -1` showed one task, `--offset -5` all)."""

from __future__ import annotations

from pathlib import Path

import pytest

from weaver.cli import main

PAGED = [["tasks"], ["history"], ["records", "markdown-analyzer"], ["audit"], ["base", "B.base"]]
LIMITED_ONLY = [["search", "plan"], ["edits", "Note.md"]]
CASES = [(c, "--limit", "0", 1) for c in PAGED + LIMITED_ONLY] + [
    (c, "--offset", "-5", 0) for c in PAGED
]


@pytest.mark.parametrize(("command", "flag", "value", "least"), CASES, ids=str)
def test_a_count_out_of_range_is_refused_naming_the_flag(
    command: list[str],
    flag: str,
    value: str,
    least: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--vault", str(tmp_path), *command, flag, value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: '{value}' is not a whole number of at least {least}" in err
    assert not (tmp_path / ".weaver").exists()  # refused before anything was opened


@pytest.mark.parametrize(
    ("command", "most"), [(["history"], 100), (["records", "markdown-analyzer"], 500)], ids=str
)
def test_a_page_larger_than_the_query_serves_is_refused(
    command: list[str], most: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It used to be cut to the most silently: `history --limit 500` printed 100 runs."""
    with pytest.raises(SystemExit) as exited:
        main(["--vault", str(tmp_path), *command, "--limit", str(most + 1)])
    assert exited.value.code == 2
    assert f"'{most + 1}' is more than {most}, the most one page holds" in capsys.readouterr().err


def test_the_cli_page_bounds_are_the_queries() -> None:
    from weaver.cache.records import PAGE_MAX_LIMIT
    from weaver.cli.workflow_commands import HISTORY_PAGE_MOST, RECORDS_PAGE_MOST
    from weaver.engine.engine import HISTORY_MAX_LIMIT

    assert (HISTORY_PAGE_MOST, RECORDS_PAGE_MOST) == (HISTORY_MAX_LIMIT, PAGE_MAX_LIMIT)
