"""The editing tools through the SDK's in-memory client: each one once on a temp vault, the
errors a model will meet, and none of the writing ones when the vault is read-only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import Tools, serve, tools_of
from weaver.cache import journal
from weaver.config import Settings
from weaver.edits import notes
from weaver.runtime.app import open_app
from weaver.runtime.lifespan import keep_cache_fresh
from weaver.runtime.state import ServerState

pytestmark = pytest.mark.anyio

WRITING = {
    "edit_file",
    "replace_in_file",
    "update_frontmatter",
    "add_tags",
    "remove_tags",
    "rename_tag",
    "append_to_daily_note",
}
READING = {"get_files_content", "get_daily_note"}

FILES: dict[str, str | bytes] = {
    "Projects/Weaver.md": (
        "---\ntitle: Weaver  # the name\ntags:\n  - proj\n---\n# Weaver\nIntro #proj/mcp\n"
        "## Tasks\n- [ ] one ^t1\n\n## Notes\nnothing yet\n"
    ),
    "Other.md": "Tagged #proj and `#proj` in code\n",
    "Templates/Daily.md": "# {{title}}\nMade {{date:dddd}}\n",
    ".obsidian/daily-notes.json": '{"folder": "Journal", "format": "YYYY/MM/YYYY-MM-DD", '
    '"template": "Templates/Daily"}',
    ".obsidian/templates.json": '{"folder": "Templates"}',
    "blob.md": b"\xff\xfe\x00binary",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def vault(tmp_path: Path) -> Path:
    return write_files(tmp_path / "vault", FILES)


async def test_the_edit_tools_end_to_end(tmp_path: Path) -> None:
    served = serve(Settings(vault=vault(tmp_path)))
    try:
        async with tools_of(served, "legacy") as tools:
            listed = {tool.name for tool in (await tools.client.list_tools()).tools}
            assert listed >= WRITING | READING
            await _exercise(tools, served.root)
    finally:
        served.app.close()


async def _exercise(tools: Any, root: Path) -> None:
    path = "Projects/Weaver.md"
    data = await tools.ok(
        "edit_file", path=path, position="after", heading="weaver::TASKS", content="- [ ] two"
    )
    assert data["changed"] and data["linesAdded"] == 1 and data["diff"] == ["+- [ ] two"]
    assert "- [ ] one ^t1\n- [ ] two\n\n## Notes" in (root / path).read_text()
    stale = await tools.error(
        "edit_file", path=path, position="append", content="x", expectedHash="0" * 64
    )
    assert "File changed on disk" in stale
    missing = await tools.error(
        "edit_file", path=path, position="replace", heading="Nope", content="x"
    )
    assert "no heading path 'Nope'" in missing and "## Tasks" in missing
    await tools.ok("edit_file", path=path, position="after", heading="Weaver", content="Own.")
    assert "Intro #proj/mcp\nOwn.\n## Tasks" in (root / path).read_text()
    await tools.ok(
        "edit_file", path=path, position="end_of_section", heading="Weaver", content="The end."
    )
    assert (root / path).read_text().endswith("## Notes\nnothing yet\nThe end.\n")
    no_end = await tools.error(
        "edit_file", path=path, position="end_of_section", block="t1", content="x"
    )
    assert "a block has none" in no_end
    data = await tools.ok("replace_in_file", path=path, find="nothing yet", replace="something")
    assert data["matches"] == 1
    none = await tools.error("replace_in_file", path=path, find="absent", replace="y")
    assert "is not in the note's body" in none
    data = await tools.ok("update_frontmatter", path=path, set={"status": "active"})
    assert (root / path).read_text().startswith("---\ntitle: Weaver  # the name\n")
    dry = await tools.ok("rename_tag", tag="proj", newTag="Project", dryRun=True)
    assert dry["dryRun"] and dry["notes"] == 2 and dry["totalChanges"] == 3
    assert "#proj" in (root / "Other.md").read_text()
    done = await tools.ok("rename_tag", tag="#proj", newTag="Project")
    assert done["written"] == 2 and done["journalId"] is not None
    assert (root / "Other.md").read_text() == "Tagged #Project and `#proj` in code\n"
    tagged = await tools.ok("add_tags", paths=["Other.md", "missing.md"], tags=["new"])
    assert tagged["notes"][0]["changed"] and "not found" in tagged["notes"][1]["error"]
    found = await tools.ok("search_tags", tag="project")
    assert {f["path"] for f in found["files"]} == {path, "Other.md"}
    day = await tools.ok("get_daily_note", date="2026-11-26")
    assert day == {
        "path": "Journal/2026/11/2026-11-26.md",
        "date": "2026-11-26",
        "exists": False,
        "content": None,
        "contentHash": None,
        "truncated": False,
    }
    appended = await tools.ok("append_to_daily_note", text="- met Ana", date="2026-11-26")
    assert appended["created"]
    made = (root / "Journal/2026/11/2026-11-26.md").read_text()
    assert made == "# 2026-11-26\nMade Thursday\n- met Ana\n"
    files = await tools.ok(
        "get_files_content",
        paths=[path, {"path": path, "section": "Tasks"}, "blob.md", "nope.md"],
    )
    first, section, blob, nope = files["files"]
    assert first["contentHash"] and section["content"].startswith("## Tasks\n")
    assert "UTF-8" in blob["error"] and "not found" in nope["error"]
    created = await tools.ok("create_file", path="Meetings/Kickoff.md", template="Daily")
    assert (root / "Meetings/Kickoff.md").read_text().startswith("# Kickoff\nMade ")
    assert created["changed"]


async def test_read_only_vaults_get_only_the_reading_tools(tmp_path: Path) -> None:
    served = serve(Settings(vault=vault(tmp_path), read_only=True))
    try:
        async with tools_of(served, "legacy") as tools:
            listed = {tool.name for tool in (await tools.client.list_tools()).tools}
            assert listed >= READING and not WRITING & listed
    finally:
        served.app.close()


async def test_get_files_content_stays_within_its_answer_bound(tmp_path: Path) -> None:
    big = {f"big{i}.md": "x" * 30_000 for i in range(5)}
    served = serve(Settings(vault=write_files(tmp_path / "vault", big)))
    try:
        async with tools_of(served, "legacy") as tools:
            data = await tools.ok("get_files_content", paths=sorted(big))
    finally:
        served.app.close()
    assert data["truncated"] is True
    # 20,000 estimated tokens of text in all: 60,000 ASCII characters, two notes whole.
    assert sum(len(f["content"]) for f in data["files"]) == 60_000
    assert [f["truncated"] for f in data["files"]] == [False, False, True, True, True]


async def test_the_server_finishes_an_interrupted_rename_when_it_starts(tmp_path: Path) -> None:
    root = write_files(tmp_path / "vault", {"a.md": "#proj a\n", "b.md": "#proj b\n"})
    app = open_app(Settings(vault=root))
    try:
        old = {p: notes.sha256((root / p).read_bytes()) for p in ("a.md", "b.md")}
        new = {p: notes.sha256(f"#work {p[0]}\n".encode()) for p in old}
        with app.db.begin() as conn:  # as a run killed before its first write leaves it
            journal.begin_run(
                conn,
                "rename_tag",
                {"from": "proj", "to": "work"},
                [
                    journal.PlannedNote(p, old[p], new[p], new_data=f"#work {p[0]}\n".encode())
                    for p in old
                ],
            )
        await keep_cache_fresh(ServerState(app, watch=False))
        assert (root / "a.md").read_text() == "#work a\n"
        with app.db.connect() as conn:
            assert journal.unfinished_runs(conn) == []
    finally:
        app.close()


async def test_rename_tag_pages_its_changes_and_clips_long_lines(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {f"n{i}.md": f"#proj {'x' * 1000}\n" for i in range(5)}
    served = serve(Settings(vault=write_files(tmp_path / "vault", files)))
    try:
        async with tools_of(served, "legacy") as tools:
            page = await tools.ok(
                "rename_tag", tag="proj", newTag="w", dryRun=True, details=True, limit=2
            )
            rest = await tools.ok(
                "rename_tag", tag="proj", newTag="w", dryRun=True, details=True, offset=2, limit=10
            )
    finally:
        served.app.close()
    assert page["totalChanges"] == 5 and page["hasMore"] and len(page["changes"]) == 2
    assert len(rest["changes"]) == 3 and not rest["hasMore"]
    assert len(page["changes"][0]["before"]) == 300 and page["changes"][0]["after"].endswith("…")


def busy_vault() -> dict[str, str | bytes]:
    """300 notes tagged on long lines, every third twice: 400 lines for a rename to change."""
    prose = "a sentence about the project that goes on for a while " * 4
    files: dict[str, str | bytes] = {}
    for i in range(300):
        twice = f"\nLater: {prose} #proj/sub\n" if i % 3 == 0 else "\n"
        files[f"notes/n{i:03}.md"] = f"# Note {i}\n{prose} #proj {prose}{twice}"
    return files


async def test_a_bulk_dry_run_answers_a_summary_and_pages_details(tmp_path: Path) -> None:
    served = serve(Settings(vault=write_files(tmp_path / "vault", busy_vault())))
    try:
        async with tools_of(served, "legacy") as tools:
            envelope = await tools.raw(
                "rename_tag", {"tag": "proj", "newTag": "work", "dryRun": True}
            )
            every = await walk_details(tools)
            done = await tools.raw("rename_tag", {"tag": "proj", "newTag": "work"})
    finally:
        served.app.close()
    dry = envelope["data"]
    assert len(json.dumps(envelope)) <= 10_000
    assert next(iter(dry)) == "summary" and dry["summary"].startswith(
        "Dry run: #proj -> #work would change 400 lines in 300 notes; nothing written."
    )
    assert "details: true" in dry["summary"]
    assert (dry["notes"], dry["totalChanges"], len(dry["changes"]), dry["hasMore"]) == (
        300,
        400,
        5,
        True,
    )
    assert dry["changes"][0]["path"] == "notes/n000.md" and dry["outcomes"] == []
    assert len(every) == 400 == len({(c["path"], c["line"]) for c in every})
    assert all("#work" in c["after"] for c in every)
    assert len(json.dumps(done)) <= 10_000
    assert done["data"]["summary"].startswith(
        "#proj -> #work: 400 lines changed, 300 notes written."
    )


async def walk_details(tools: Tools) -> list[dict[str, Any]]:
    """Every changed line of the dry run, 150 at a time."""
    found: list[dict[str, Any]] = []
    while True:
        args = {"dryRun": True, "details": True, "offset": len(found), "limit": 150}
        page = await tools.ok("rename_tag", tag="proj", newTag="work", **args)
        found += page["changes"]
        if not page["hasMore"]:
            return found


async def test_a_daily_note_past_the_answer_bound_comes_back_cut_and_says_so(
    tmp_path: Path,
) -> None:
    served = serve(Settings(vault=write_files(tmp_path / "vault", {"2026-11-26.md": "y" * 90_000})))
    try:
        async with tools_of(served, "legacy") as tools:
            data = await tools.ok("get_daily_note", date="2026-11-26")
    finally:
        served.app.close()
    assert data["truncated"] is True
    assert data["content"] == "y" * 60_000  # 20,000 estimated tokens of ASCII text
