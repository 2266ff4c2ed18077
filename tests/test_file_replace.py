"""A rename over a note that another program holds open (Windows: Obsidian reading it, an
antivirus scanning it) is tried again for about a second; a write that still cannot land is
reported failed with the note as it was and no temporary file left. Windows' errors are made
here by a replace that raises them, as `os.replace` does there."""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path

import pytest

from weaver.file_replace import RETRY_PAUSES_S, replace_file
from weaver.vault.fs import Vault
from weaver.vault.writer import VaultWriter


def held_open() -> PermissionError:
    exc = PermissionError(errno.EACCES, "The process cannot access the file")
    exc.winerror = 32  # type: ignore[attr-defined]  # ERROR_SHARING_VIOLATION, as on Windows
    return exc


def failing_replace(
    monkeypatch: pytest.MonkeyPatch, failures: int, error: Callable[[], OSError] = held_open
) -> list[int]:
    """Path.replace fails `failures` times with `error()`, then works; returns the tries."""
    tries: list[int] = []
    real = Path.replace

    def replace(self: Path, target: Path) -> Path:
        tries.append(1)
        if len(tries) <= failures:
            raise error()
        return real(self, target)

    monkeypatch.setattr(Path, "replace", replace)
    return tries


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr("weaver.file_replace.time.sleep", slept.append)
    return slept


def test_a_file_held_open_for_a_moment_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pauses: list[float]
) -> None:
    (tmp_path / "new").write_text("new")
    (tmp_path / "note.md").write_text("old")
    tries = failing_replace(monkeypatch, failures=2)
    replace_file(tmp_path / "new", tmp_path / "note.md")
    assert (tmp_path / "note.md").read_text() == "new"
    assert len(tries) == 3 and pauses == list(RETRY_PAUSES_S[:2])


def test_a_file_held_open_for_good_fails_after_about_a_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pauses: list[float]
) -> None:
    (tmp_path / "new").write_text("new")
    failing_replace(monkeypatch, failures=100)
    with pytest.raises(PermissionError) as raised:
        replace_file(tmp_path / "new", tmp_path / "note.md")
    assert raised.value.winerror == 32  # type: ignore[attr-defined]
    assert pauses == list(RETRY_PAUSES_S)
    assert 0.8 < sum(RETRY_PAUSES_S) < 2


@pytest.mark.parametrize(
    "error",
    [
        lambda: PermissionError(errno.EACCES, "Permission denied"),  # POSIX: a real refusal
        lambda: OSError(errno.ENOSPC, "No space left on device"),
    ],
    ids=["permission", "disk-full"],
)
def test_other_errors_are_raised_at_once(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    pauses: list[float],
    error: Callable[[], OSError],
) -> None:
    (tmp_path / "new").write_text("new")
    tries = failing_replace(monkeypatch, failures=100, error=error)
    with pytest.raises(OSError):
        replace_file(tmp_path / "new", tmp_path / "note.md")
    assert len(tries) == 1 and pauses == []


def test_a_note_write_waits_out_a_short_hold(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch, pauses: list[float]
) -> None:
    writer = VaultWriter(Vault(vault_dir))
    writer.write_text("a.md", "# A\nold\n")
    failing_replace(monkeypatch, failures=3)
    writer.write_text("a.md", "# A\nnew\n")
    assert (vault_dir / "a.md").read_text() == "# A\nnew\n"
    assert len(pauses) == 3


def test_a_note_write_that_cannot_land_leaves_the_note_and_no_temporary_file(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch, pauses: list[float]
) -> None:
    writer = VaultWriter(Vault(vault_dir))
    writer.write_text("a.md", "# A\nold\n")
    failing_replace(monkeypatch, failures=100)
    with pytest.raises(PermissionError):
        writer.write_text("a.md", "# A\nnew\n")
    assert (vault_dir / "a.md").read_text() == "# A\nold\n"
    assert sorted(p.name for p in vault_dir.iterdir() if p.is_file()) == ["a.md"]
