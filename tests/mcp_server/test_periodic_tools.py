"""get_periodic_note and append_to_periodic_note through the SDK's in-memory client: a weekly
note found and made from its template by the Periodic Notes settings, its edit undoable, a bad
period refused, and no appending on a read-only vault."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import write_files
from tests.mcp_server.test_cache_tools import serve, tools_of
from weaver.config import Settings

pytestmark = pytest.mark.anyio

PLUGIN = {
    "weekly": {"enabled": True, "folder": "Plans", "format": "gggg-[W]ww", "template": "T/Week"},
    "yearly": {"enabled": True, "folder": "Plans", "format": "YYYY"},
}
FILES: dict[str, str | bytes] = {
    ".obsidian/community-plugins.json": '["periodic-notes"]',
    ".obsidian/plugins/periodic-notes/data.json": json.dumps(PLUGIN),
    "T/Week.md": "# {{title}}\nMonday {{monday:YYYY-MM-DD}}\n",
    "Plans/2026.md": "# 2026\n- [ ] ship Weaver\n",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_weekly_note_found_made_and_undone(tmp_path: Path) -> None:
    root = write_files(tmp_path / "vault", FILES)
    served = serve(Settings(vault=root))
    try:
        async with tools_of(served, "legacy") as tools:
            week = await tools.ok("get_periodic_note", period="week", date="2027-01-01")
            assert week == {
                "path": "Plans/2027-W01.md",
                "period": "week",
                "date": "2026-12-27",
                "exists": False,
                "content": None,
                "contentHash": None,
                "truncated": False,
                "settings": "periodic-notes",
            }
            made = await tools.ok(
                "append_to_periodic_note", period="week", text="- call Ana", date="2027-01-01"
            )
            assert made["created"] and made["path"] == "Plans/2027-W01.md"
            text = (root / "Plans/2027-W01.md").read_text()
            assert text == "# 2027-W01\nMonday 2026-12-28\n- call Ana\n"
            again = await tools.ok("get_periodic_note", period="week", date="2026-12-28")
            assert again["exists"] and again["contentHash"] == made["contentHash"]
            year = await tools.ok(
                "append_to_periodic_note", period="year", text="- [ ] rest", date="2026-03-01"
            )
            assert not year["created"] and year["diff"] == ["+- [ ] rest"]
            edits = await tools.ok("list_edits", path="Plans/2026.md")
            [edit] = edits["edits"]  # an append is recorded as the edit it is
            assert edit["operation"] == "edit_file" and edit["restorable"]
            await tools.ok("restore_edit", path="Plans/2026.md", editId=edit["editId"])
            assert (root / "Plans/2026.md").read_text() == FILES["Plans/2026.md"]
            bad = await tools.error("get_periodic_note", period="fortnight")
            assert "period" in bad and "'day', 'week', 'month', 'quarter' or 'year'" in bad
    finally:
        served.app.close()


async def test_a_read_only_vault_reads_periodic_notes_but_never_appends(tmp_path: Path) -> None:
    served = serve(Settings(vault=write_files(tmp_path / "vault", FILES), read_only=True))
    try:
        async with tools_of(served, "auto") as tools:
            listed = {tool.name for tool in (await tools.client.list_tools()).tools}
            assert "get_periodic_note" in listed and "append_to_periodic_note" not in listed
            year = await tools.ok("get_periodic_note", period="year", date="2026-06-30")
            assert year["content"] == "# 2026\n- [ ] ship Weaver\n"
    finally:
        served.app.close()
