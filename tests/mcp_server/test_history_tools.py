"""Undo through MCP (list_edits, restore_edit), and the write tools' promises as a client sees
them: one of twenty same-hash edits accepted, a deadline that never abandons a write, a full
cache answered truthfully."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers import wait_for_async, write_files
from tests.mcp_server.test_cache_tools import serve, tools_of
from weaver.config import Settings
from weaver.edits import patches, steps

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def vault(tmp_path: Path) -> Path:
    return write_files(tmp_path / "vault", {"Plan.md": "# Plan\nfirst\n", "Other.md": "x\n"})


async def test_an_edit_by_an_assistant_can_be_listed_and_undone(tmp_path: Path) -> None:
    served = serve(Settings(vault=vault(tmp_path)))
    root = served.root
    try:
        async with tools_of(served, "auto") as tools:
            await tools.ok("edit_file", path="Plan.md", position="append", content="second")
            await tools.ok("replace_in_file", path="Plan.md", find="first", replace="FIRST")
            listed = await tools.ok("list_edits", path="Plan.md")
            assert [e["operation"] for e in listed["edits"]] == ["edit_file", "edit_file"]
            assert listed["total"] == 2 and not listed["hasMore"]
            latest, earlier = listed["edits"]
            assert latest["current"] and not earlier["current"] and latest["restorable"]
            # Undo the older edit: the note changed since, so it is refused...
            refused = await tools.error("restore_edit", path="Plan.md", editId=earlier["editId"])
            assert "has changed since edit" in refused and "nothing was written" in refused
            assert (root / "Plan.md").read_text() == "# Plan\nFIRST\nsecond\n"
            # ...and the latest one is undone, which is itself an undoable edit.
            undone = await tools.ok("restore_edit", path="Plan.md", editId=latest["editId"])
            assert (root / "Plan.md").read_text() == "# Plan\nfirst\nsecond\n"
            assert undone["contentHash"] == steps.sha256((root / "Plan.md").read_bytes())
            again = await tools.ok("list_edits", path="Plan.md", limit=1)
            assert again["edits"][0]["operation"] == "restore_edit" and again["hasMore"]
            # With the current hash, an older version is restored over later changes.
            older = await tools.ok(
                "restore_edit",
                path="Plan.md",
                editId=earlier["editId"],
                expectedHash=undone["contentHash"],
            )
            assert older["changed"] and (root / "Plan.md").read_text() == "# Plan\nfirst\n"
    finally:
        served.app.close()


async def test_a_deleted_note_comes_back_and_a_created_one_goes_to_trash(tmp_path: Path) -> None:
    served = serve(Settings(vault=vault(tmp_path)))
    root = served.root
    try:
        async with tools_of(served, "auto") as tools:
            await tools.ok("delete_file", path="Other.md")
            [deleted] = (await tools.ok("list_edits", path="Other.md"))["edits"]
            assert deleted["newHash"] is None and deleted["current"]
            await tools.ok("restore_edit", path="Other.md", editId=deleted["editId"])
            assert (root / "Other.md").read_text() == "x\n"
            await tools.ok("create_file", path="New.md", content="fresh")
            [created] = (await tools.ok("list_edits", path="New.md"))["edits"]
            assert created["oldHash"] is None
            gone = await tools.ok("restore_edit", path="New.md", editId=created["editId"])
            assert not (root / "New.md").exists() and gone["trashPath"] == ".trash/New.md"
            unknown = await tools.error("restore_edit", path="Plan.md", editId=999)
            assert "no edit 999 of 'Plan.md'" in unknown
    finally:
        served.app.close()


async def test_the_history_survives_a_restart(tmp_path: Path) -> None:
    settings = Settings(vault=vault(tmp_path))
    served = serve(settings)
    try:
        async with tools_of(served, "auto") as tools:
            await tools.ok("edit_file", path="Plan.md", position="append", content="kept")
    finally:
        served.app.close()
    again = serve(settings)
    try:
        async with tools_of(again, "auto") as tools:
            [edit] = (await tools.ok("list_edits", path="Plan.md"))["edits"]
            await tools.ok("restore_edit", path="Plan.md", editId=edit["editId"])
            assert (again.root / "Plan.md").read_text() == "# Plan\nfirst\n"
    finally:
        again.app.close()


async def test_a_read_only_server_lists_edits_but_cannot_restore(tmp_path: Path) -> None:
    served = serve(Settings(vault=vault(tmp_path), read_only=True))
    try:
        async with tools_of(served, "auto") as tools:
            names = {t.name for t in (await tools.client.list_tools()).tools}
            assert "list_edits" in names and "restore_edit" not in names
    finally:
        served.app.close()


async def test_twenty_same_hash_edits_over_mcp_accept_exactly_one(tmp_path: Path) -> None:
    served = serve(Settings(vault=vault(tmp_path)))
    root = served.root
    start = steps.sha256((root / "Plan.md").read_bytes())
    answers: list[dict[str, Any]] = []
    try:
        async with tools_of(served, "auto") as tools:

            async def edit(i: int) -> None:
                answers.append(
                    await tools.raw(
                        "edit_file",
                        {
                            "path": "Plan.md",
                            "position": "append",
                            "content": f"edit {i}",
                            "expectedHash": start,
                        },
                    )
                )

            async with anyio.create_task_group() as group:
                for i in range(20):
                    group.start_soon(edit, i)
    finally:
        served.app.close()
    accepted = [a for a in answers if a["success"]]
    assert len(accepted) == 1
    assert all("File changed on disk" in a["error"] for a in answers if not a["success"])
    assert (root / "Plan.md").read_text().count("edit ") == 1


async def test_a_write_past_its_deadline_is_finished_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = serve(Settings(vault=vault(tmp_path), tool_timeout_s=0.3))
    original = steps.guarded_write

    def slow_write(*args: Any, **kwargs: Any) -> None:
        time.sleep(0.8)  # the deadline passes while the write is under way
        original(*args, **kwargs)

    monkeypatch.setattr(steps, "guarded_write", slow_write)
    try:
        async with tools_of(served, "auto") as tools:
            answer = await tools.raw(
                "edit_file", {"path": "Plan.md", "position": "append", "content": "slow"}
            )
    finally:
        served.app.close()
    assert answer["success"], answer
    assert "finished rather than abandoned" in answer["metadata"]["warnings"][0]
    assert (served.root / "Plan.md").read_text() == "# Plan\nfirst\nslow\n"


async def test_a_write_stopped_by_its_deadline_before_it_began_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = serve(Settings(vault=vault(tmp_path), tool_timeout_s=0.3))
    original, patch_note = patches.insert_transform, patches.patch_note
    ended = threading.Event()

    def slow_transform(*args: Any, **kwargs: Any) -> patches.Transform:
        transform = original(*args, **kwargs)

        def slowly(text: str) -> tuple[str, int]:
            time.sleep(0.8)  # still computing the edit when the deadline passes
            return transform(text)

        return slowly

    def patch_note_then_say(*args: Any, **kwargs: Any) -> Any:
        try:
            return patch_note(*args, **kwargs)
        finally:
            ended.set()

    monkeypatch.setattr(patches, "insert_transform", slow_transform)
    monkeypatch.setattr(patches, "patch_note", patch_note_then_say)
    try:
        async with tools_of(served, "auto") as tools:
            answer = await tools.raw(
                "edit_file", {"path": "Plan.md", "position": "append", "content": "late"}
            )
        # The abandoned thread reaches its commit point, and stops there.
        await wait_for_async(ended.is_set, 5, "the abandoned edit to end")
    finally:
        served.app.close()
    assert not answer["success"] and "nothing was written" in answer["error"]
    assert (served.root / "Plan.md").read_text() == "# Plan\nfirst\n"


async def test_a_move_is_undone_by_moving_the_note_back(tmp_path: Path) -> None:
    root = write_files(
        tmp_path / "vault",
        {
            "Plan.md": "# Plan\n",
            "Other.md": "x\n",
            "Dup/Plan.md": "# Another plan\n",
            "Link.md": "See [[Plan]]\n",
        },
    )
    served = serve(Settings(vault=root))
    try:
        async with tools_of(served, "auto") as tools:
            await tools.ok("move_file", path="Plan.md", newPath="Archive/Plan.md")
            assert (root / "Link.md").read_text() == "See [[Archive/Plan]]\n"
            [move] = (await tools.ok("list_edits", path="Plan.md"))["edits"]
            assert move["operation"] == "move_file" and move["restorable"]
            back = await tools.ok("restore_edit", path="Plan.md", editId=move["editId"])
            assert back["path"] == "Plan.md" and (root / "Plan.md").read_text() == "# Plan\n"
            assert not (root / "Archive/Plan.md").exists()
            assert (root / "Link.md").read_text() == "See [[Plan]]\n"
    finally:
        served.app.close()
