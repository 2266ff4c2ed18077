"""Destructive calls confirmed by the person (`mcp_server.confirmation`): through the SDK's
in-memory client, with an elicitation callback that accepts, declines or cancels, in both
protocol modes (a mid-call request up to 2025-11-25, an `input_required` round trip after),
and without the capability under both settings of `confirm_destructive`."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import pytest
from mcp import Client
from mcp_types import (
    ClientCapabilities,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
)

from tests.helpers import write_files
from tests.mcp_server.served_http import served as served_http
from tests.mcp_server.test_cache_tools import Served, Tools, serve
from weaver.config import Settings
from weaver.edits import notes
from weaver.mcp_server.confirmation import can_elicit

pytestmark = pytest.mark.anyio

MODES = ["legacy", "auto"]
LINKERS = [f"linkers/L{n:02}.md" for n in range(12)]  # more than confirm_move_notes (10)
FILES: dict[str, str | bytes] = {
    "Target.md": "# Target\n#old here\n",
    "A.md": "See [[Target]] and #old.\n",
    "B.md": "Also [[Target|the target]].\n",
    "Busy.md": "# Busy\n",
    "Quiet.md": "# Quiet\n",
    "C.md": "Only [[Quiet]].\n",
    "D1.md": "---\ntags: [draft, keep]\n---\nOne\n",
    "D2.md": "---\ntags: draft\n---\nTwo\n",
    **dict.fromkeys(LINKERS, "Link to [[Busy]] and [[Busy#Busy]].\n"),
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Person:
    """The client's elicitation callback: answers every question with `action` (and, when
    accepting, `confirm`), and keeps the messages it was shown."""

    def __init__(
        self, action: Literal["accept", "decline", "cancel"] = "accept", confirm: bool = True
    ) -> None:
        self.action = action
        self.confirm = confirm
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: ElicitRequestParams) -> ElicitResult:
        assert isinstance(params, ElicitRequestFormParams)  # a form, not a page to visit
        self.asked.append(params.message)
        assert params.requested_schema["properties"]["confirm"]["type"] == "boolean"
        accepted = self.action == "accept"
        content: dict[str, Any] | None = {"confirm": self.confirm} if accepted else None
        return ElicitResult(action=self.action, content=content)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    yield from _served(tmp_path, Settings(vault=write_files(tmp_path / "vault", FILES)))


@pytest.fixture
def refusing(tmp_path: Path) -> Iterator[Served]:
    root = write_files(tmp_path / "vault", FILES)
    yield from _served(tmp_path, Settings(vault=root, confirm_destructive="refuse"))


def _served(tmp_path: Path, settings: Settings) -> Iterator[Served]:
    settings = settings.model_copy(update={"toolsets": ["notes", "edit", "tags"]})
    served = serve(settings)
    try:
        yield served
    finally:
        served.app.close()


@asynccontextmanager
async def client(served: Served, mode: str, person: Person | None) -> AsyncIterator[Tools]:
    async with Client(served.server, mode=mode, elicitation_callback=person) as connected:
        yield Tools(connected)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*.md")}


@pytest.mark.parametrize("mode", MODES)
async def test_a_deletion_the_person_accepts_is_made(served: Served, mode: str) -> None:
    person = Person("accept")
    async with client(served, mode, person) as tools:
        data = await tools.ok("delete_file", path="Target.md")
    assert data["deleted"] and not (served.root / "Target.md").exists()
    [question] = person.asked
    assert "Delete the note 'Target.md'?" in question
    assert "2 notes link to it; those links will be broken: A.md, B.md." in question


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("action", "said"), [("decline", "said no"), ("cancel", "dismissed the confirmation")]
)
async def test_a_deletion_declined_or_dismissed_changes_nothing(
    served: Served, mode: str, action: Literal["decline", "cancel"], said: str
) -> None:
    before = snapshot(served.root)
    person = Person(action)
    async with client(served, mode, person) as tools:
        error = await tools.error("delete_file", path="Target.md")
        assert error.startswith("Declined by the user:") and said in error
        assert "delete_file" in error and "nothing was changed" in error
        # The cache still knows the note: nothing was written anywhere.
        assert (await tools.ok("get_file", path="Target.md"))["path"] == "Target.md"
    assert snapshot(served.root) == before
    assert len(person.asked) == 1


async def test_an_accepted_form_answering_no_is_a_decline(served: Served) -> None:
    async with client(served, "legacy", Person("accept", confirm=False)) as tools:
        error = await tools.error("delete_file", path="Target.md")
    assert "Declined by the user: they answered no" in error
    assert (served.root / "Target.md").exists()


@pytest.mark.parametrize("mode", MODES)
async def test_a_move_over_many_links_names_them_and_a_no_keeps_every_note(
    served: Served, mode: str
) -> None:
    before = snapshot(served.root)
    person = Person("decline")
    async with client(served, mode, person) as tools:
        error = await tools.error("move_file", path="Busy.md", newPath="Crowded.md")
    assert "Declined by the user" in error
    assert snapshot(served.root) == before
    [question] = person.asked
    assert "Move the note 'Busy.md' to 'Crowded.md'?" in question
    assert "rewritten in 12 notes (24 links): linkers/L00.md (2), linkers/L01.md (2)" in question
    assert "linkers/L11.md (2)." in question


@pytest.mark.parametrize("mode", MODES)
async def test_a_move_over_many_links_goes_ahead_once_confirmed(served: Served, mode: str) -> None:
    person = Person("accept")
    async with client(served, mode, person) as tools:
        data = await tools.ok("move_file", path="Busy.md", newPath="Crowded.md")
    assert data["path"] == "Crowded.md" and len(data["rewritten"]) == 12
    assert len(person.asked) == 1
    assert "[[Crowded]] and [[Crowded#Busy]]" in (served.root / LINKERS[0]).read_text()


async def test_a_move_over_few_links_is_not_asked_about(served: Served) -> None:
    person = Person("decline")
    async with client(served, "legacy", person) as tools:
        data = await tools.ok("move_file", path="Quiet.md", newPath="Calm.md")
    assert data["rewritten"] == [{"path": "C.md", "links": 1}]
    assert person.asked == []


@pytest.mark.parametrize("mode", MODES)
async def test_a_tag_rename_names_the_notes_and_a_no_keeps_them(served: Served, mode: str) -> None:
    before = snapshot(served.root)
    person = Person("decline")
    async with client(served, mode, person) as tools:
        error = await tools.error("rename_tag", tag="old", newTag="new")
        assert "Declined by the user" in error and "rename_tag" in error
        # A dry run changes nothing: it is not asked about.
        dry = await tools.ok("rename_tag", tag="old", newTag="new", dryRun=True)
        assert dry["totalChanges"] == 2
    assert snapshot(served.root) == before
    [question] = person.asked
    assert question == (
        "Rename the tag #old to #new in every note? 2 lines change in 2 notes: A.md, Target.md."
    )


async def test_a_tag_rename_goes_ahead_once_confirmed(served: Served) -> None:
    async with client(served, "auto", Person("accept")) as tools:
        data = await tools.ok("rename_tag", tag="old", newTag="new")
    assert data["written"] == 2
    assert "#new" in (served.root / "A.md").read_text()


@pytest.mark.parametrize("mode", MODES)
async def test_a_tag_removal_over_several_notes_is_asked_about(served: Served, mode: str) -> None:
    before = snapshot(served.root)
    person = Person("decline")
    async with client(served, mode, person) as tools:
        paths = ["D1.md", "D2.md", "A.md"]  # A.md has no such frontmatter tag: not counted
        error = await tools.error("remove_tags", paths=paths, tags=["#draft"])
        assert "Declined by the user" in error
        assert snapshot(served.root) == before
        # One note changed is no bulk edit: not asked.
        await tools.ok("remove_tags", paths=["D1.md", "A.md"], tags=["draft"])
    assert person.asked == ["Remove #draft from the frontmatter of 2 notes? D1.md, D2.md."]
    assert (served.root / "D1.md").read_text() == "---\ntags: [keep]\n---\nOne\n"


@pytest.mark.parametrize("mode", MODES)
async def test_without_elicitation_the_default_setting_allows(served: Served, mode: str) -> None:
    async with client(served, mode, None) as tools:
        await tools.ok("delete_file", path="Target.md")
        await tools.ok("rename_tag", tag="old", newTag="new")
        await tools.ok("move_file", path="Busy.md", newPath="Crowded.md")
    assert not (served.root / "Target.md").exists()
    assert (served.root / "Crowded.md").exists()


@pytest.mark.parametrize("mode", MODES)
async def test_without_elicitation_refuse_says_why_and_how_to_allow(
    refusing: Served, mode: str
) -> None:
    before = snapshot(refusing.root)
    async with client(refusing, mode, None) as tools:
        error = await tools.error("delete_file", path="Target.md")
        assert error.startswith("Refused: delete_file needs the user's confirmation")
        assert "does not support MCP elicitation" in error
        assert 'confirm_destructive = "allow"' in error and "WEAVER_CONFIRM_DESTRUCTIVE" in error
        assert "What it would do: Delete the note 'Target.md'?" in error
        assert "Refused: rename_tag" in await tools.error("rename_tag", tag="old", newTag="new")
        assert "Refused: move_file" in await tools.error(
            "move_file", path="Busy.md", newPath="Crowded.md"
        )
        # What needs no confirmation still runs.
        await tools.ok("move_file", path="Quiet.md", newPath="Calm.md")
        await tools.ok("rename_tag", tag="old", newTag="new", dryRun=True)
    after = snapshot(refusing.root)
    assert after.pop("Calm.md") == before.pop("Quiet.md")
    assert after.pop("C.md") == b"Only [[Calm]].\n"
    before.pop("C.md")
    assert after == before


async def test_refuse_still_asks_a_client_that_can_be_asked(refusing: Served) -> None:
    person = Person("accept")
    async with client(refusing, "legacy", person) as tools:
        await tools.ok("delete_file", path="Target.md")
    assert len(person.asked) == 1 and not (refusing.root / "Target.md").exists()


async def test_a_call_that_will_fail_is_not_asked_about(served: Served) -> None:
    person = Person("accept")
    async with client(served, "legacy", person) as tools:
        error = await tools.error("delete_file", path="Targt.md")
        assert "File not found" in error and "Target.md" in error  # with its hint
        error = await tools.error("move_file", path="Busy.md", newPath="Quiet.md")
        assert "File already exists" in error
    assert person.asked == []


async def test_a_long_list_of_notes_is_cut_and_counted(tmp_path: Path) -> None:
    many = {f"n/{i:03}.md": "[[Hub]]\n" for i in range(30)}
    root = write_files(tmp_path / "vault", {"Hub.md": "# Hub\n", **many})
    person = Person("decline")
    for served in _served(tmp_path, Settings(vault=root)):
        async with client(served, "legacy", person) as tools:
            await tools.error("delete_file", path="Hub.md")
    [question] = person.asked
    assert "30 notes link to it" in question
    assert "n/019.md, and 10 more." in question and "n/020.md" not in question


def test_only_a_client_with_form_elicitation_can_be_asked() -> None:
    def declared(elicitation: dict[str, Any] | None) -> ClientCapabilities:
        return ClientCapabilities.model_validate({"elicitation": elicitation})

    assert can_elicit(declared({})) and can_elicit(declared({"form": {}, "url": {}}))
    assert not can_elicit(declared({"url": {}}))  # it can only send the person to a page
    assert not can_elicit(declared(None)) and not can_elicit(None)


@pytest.mark.parametrize("mode", MODES)
async def test_over_real_http_a_no_keeps_the_note_and_a_yes_deletes_it(
    tmp_path: Path, mode: str
) -> None:
    root = write_files(tmp_path / "vault", FILES)
    no, yes = Person("decline"), Person("accept")
    async with served_http(root) as site:
        async with Client(site.url, mode=mode, elicitation_callback=no) as connected:
            error = await Tools(connected).error("delete_file", path="Target.md")
        assert "Declined by the user" in error and (root / "Target.md").exists()
        async with Client(site.url, mode=mode, elicitation_callback=yes) as connected:
            await Tools(connected).ok("delete_file", path="Target.md")
        assert not (root / "Target.md").exists()
    assert no.asked == yes.asked and "A.md, B.md" in yes.asked[0]


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("slow", "Timed out"),
        ("broken", "Internal error: could not work out what the call would change"),
    ],
)
async def test_a_dry_run_that_fails_refuses_rather_than_deletes_unseen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, said: str
) -> None:
    def preview(app: Any, path: str) -> Any:
        if fault == "slow":
            time.sleep(1.0)
        raise RuntimeError("boom")

    monkeypatch.setattr(notes, "preview_delete", preview)  # as questions calls it
    settings = Settings(vault=write_files(tmp_path / "vault", FILES), tool_timeout_s=0.2)
    person = Person("accept")
    for served in _served(tmp_path, settings):
        async with client(served, "legacy", person) as tools:
            error = await tools.error("delete_file", path="Target.md")
        assert said in error and (served.root / "Target.md").exists()
    assert person.asked == []
