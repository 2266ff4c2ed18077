"""concept-tracker: which notes are concepts, and a concept's versions as a timeline read back,
across edits, a rename and a deletion."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.workflow_vault import WorkflowVault, workflow_vault
from weaver.cache import feed
from weaver.engine import load_registry
from weaver.engine.engine import FEED_CONSUMER
from weaver.runtime.app import App

ID = "concept-tracker"


@pytest.fixture
def vault(app: App) -> Iterator[WorkflowVault]:
    with workflow_vault(app, ID) as opened:
        yield opened


def timeline(vault: WorkflowVault, path: str) -> list[dict[str, object]]:
    """Oldest first."""
    return [r.data for r in reversed(vault.records(ID, key=path, kind="version"))]


def test_only_concepts_are_tracked(vault: WorkflowVault) -> None:
    vault.write(
        {
            "Concepts/Graph.md": "nodes",
            "elsewhere/Entropy.md": "---\ntype: Concept\n---\ndisorder",
            "journal/today.md": "not a concept",
            "Concepts.md": "a note beside the folder, not in it",
        }
    )
    tracked = {r.key for r in vault.records(ID, kind="version")}
    assert tracked == {"Concepts/Graph.md", "elsewhere/Entropy.md"}
    vault.write({"journal/today.md": "still not one"})
    assert vault.last_result(ID) == {"versions": []}


def test_a_concepts_evolution_reads_back_as_a_timeline(vault: WorkflowVault) -> None:
    vault.write({"Concepts/Graph.md": "# Graph\nNodes joined by edges. [[Euler]] #math\n"})
    vault.write(
        {"Concepts/Graph.md": "# Graph\nVertices joined by edges. [[Euler]] [[Tree]] #math #cs\n"}
    )
    vault.write(
        {"Concepts/Graph.md": "# Graph\nVertices joined by edges. [[Euler]] [[Tree]] #math #cs\n"}
    )
    vault.move("Concepts/Graph.md", "Concepts/maths/Graph.md")
    vault.write({"Concepts/maths/Graph.md": "# Graph\nVertices. [[Tree]] #cs\n"})
    vault.delete("Concepts/maths/Graph.md")

    versions = timeline(vault, "Concepts/maths/Graph.md")
    assert [(v["version"], v["event"]) for v in versions] == [
        (1, "add"),
        (2, "modify"),  # saving the same text again made no version
        (3, "move"),
        (4, "modify"),
        (5, "delete"),
    ]
    first, edit, move, trim, deleted = versions
    assert first["first"] is True and first["wordsAdded"] == first["words"] == 7
    assert first["linksAdded"] == ["Euler"] and first["tagsAdded"] == ["math"]
    assert (edit["wordsAdded"], edit["wordsRemoved"]) == (3, 1)  # +vertices, tree, cs; -nodes
    assert (edit["linksAdded"], edit["linksRemoved"]) == (["Tree"], [])
    assert (edit["tagsAdded"], edit["tagsRemoved"]) == (["cs"], [])
    assert move["oldPath"] == "Concepts/Graph.md" and move["wordsAdded"] == 0
    assert (trim["linksRemoved"], trim["tagsRemoved"]) == (["Euler"], ["math"])
    assert (deleted["words"], deleted["linksRemoved"], deleted["tagsRemoved"]) == (
        0,
        ["Tree"],
        ["cs"],
    )
    assert vault.records(ID, key="Concepts/Graph.md") == []  # the timeline moved


def test_the_concept_globs_and_type_come_from_settings(app: App) -> None:
    settings = {ID: {"paths": ["ideas/**", "*.idea.md"], "note_type": "idea"}}
    with workflow_vault(app, ID, settings=settings) as vault:
        vault.write(
            {
                "ideas/deep/one.md": "a",
                "two.idea.md": "b",
                "x/three.md": "---\ntype: idea\n---\nc",
                "Concepts/four.md": "d",
            }
        )
        tracked = {r.key for r in vault.records(ID, kind="version")}
    assert tracked == {"ideas/deep/one.md", "two.idea.md", "x/three.md"}


def test_a_bad_glob_in_settings_is_a_config_error(app: App) -> None:
    configured = app.settings.model_copy(
        update={"workflows": {ID: {"settings": {"paths": ["/absolute/**"]}}}}
    )
    registry = load_registry(configured)
    assert ID not in registry
    assert any("invalid path glob" in str(error) for error in registry.errors)


def test_by_hand_every_concept_gets_its_baseline(app: App) -> None:
    folder = app.settings.vault / "Concepts"
    folder.mkdir()
    (folder / "Old.md").write_text("existing words")
    (folder / "Older.md").write_text("more words")
    app.indexer.reconcile()  # before the tracker was there to see it
    with app.db.begin() as conn:  # an engine without the tracker took these events
        feed.advance_cursor(conn, FEED_CONSUMER, None, 10**9)
    with workflow_vault(app, ID) as vault:
        result = vault.trigger(ID, {}).result
        assert [(v["path"], v["event"], v["first"]) for v in result["versions"]] == [
            ("Concepts/Old.md", "manual", True),
            ("Concepts/Older.md", "manual", True),
        ]
        # Nothing changed since: asking again records nothing.
        assert vault.trigger(ID, {"path": "Concepts/Old.md"}).result == {"versions": []}
