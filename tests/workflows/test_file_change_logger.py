"""file-change-logger: every kind of change logged with its size, hash and old path, and the
log read back per note."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from tests.workflow_vault import WorkflowVault, workflow_vault
from weaver.runtime.app import App

ID = "file-change-logger"


@pytest.fixture
def vault(app: App) -> Iterator[WorkflowVault]:
    with workflow_vault(app, ID) as opened:
        yield opened


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_every_change_is_logged_with_size_hash_and_time(vault: WorkflowVault) -> None:
    vault.write({"a.md": "one"})
    vault.write({"a.md": "one two"})
    vault.move("a.md", "archive/a.md")
    vault.delete("archive/a.md")

    log = vault.records(ID)
    assert [(r.data["kind"], r.key) for r in log] == [
        ("delete", "archive/a.md"),
        ("move", "archive/a.md"),
        ("modify", "a.md"),
        ("add", "a.md"),
    ]
    added, modified, moved, deleted = (r.data for r in reversed(log))
    assert (added["size"], added["hash"]) == (3, sha("one"))
    assert (modified["size"], modified["hash"]) == (7, sha("one two"))
    assert moved["oldPath"] == "a.md" and moved["hash"] == sha("one two")
    # Gone from the cache by the time it is logged: size and hash are the last ones logged.
    assert (deleted["size"], deleted["hash"]) == (7, sha("one two"))
    assert all(r.kind == "change" and r.data["time"] == r.recorded_at for r in log)
    # The execution's result is the event it logged.
    assert vault.last_result(ID) == {"logged": [deleted]}


def test_one_batch_is_one_run_logging_each_note(vault: WorkflowVault) -> None:
    vault.write({"x.md": "x", "y/z.md": "z"})
    assert len(vault.runs(ID)) == 1
    assert sorted(e["path"] for e in vault.last_result(ID)["logged"]) == ["x.md", "y/z.md"]
    assert [r.data["kind"] for r in vault.records(ID, key="y/z.md")] == ["add"]


def test_a_manual_run_logs_nothing(vault: WorkflowVault) -> None:
    assert vault.trigger(ID).result == {"logged": []}
    assert vault.records(ID) == []
