"""proof-spec-kit-review: findings with severity for a spec note, the notes it runs on, its
settings, and the review note it can write without starting workflows again."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.workflow_vault import WorkflowVault, workflow_vault
from weaver.runtime.app import App

ID = "proof-spec-kit-review"

DRAFT = """---
type: spec
status: draft
owner: ""
---
# Feature Specification: Export

## User Scenarios & Testing *(mandatory)*
As a user I export my notes. See [[Import flow]] and [[Export]].

## Requirements
- **FR-001**: System MUST export to PDF [NEEDS CLARIFICATION: which page size?]
- [ ] decide on fonts
- [x] pick a library

TODO: performance budget, TBD.

```
TODO inside code is not a finding
```
"""

COMPLETE = """---
type: spec
status: approved
owner: ana
---
# Spec
## User Scenarios & Testing
Users export. [[Export]]
## Requirements
- [x] all decided
## Success Criteria
Exports in under a second.
"""


@pytest.fixture
def vault(app: App) -> Iterator[WorkflowVault]:
    with workflow_vault(app, ID) as opened:
        yield opened


def test_a_spec_gets_findings_with_severity(vault: WorkflowVault) -> None:
    vault.write({"Export.md": "the feature", "specs/export.md": DRAFT})
    [review] = vault.last_result(ID)["reviews"]
    assert (review["path"], review["passed"]) == ("specs/export.md", False)
    found = [(f["severity"], f["kind"], f["line"]) for f in review["findings"]]
    assert found == [
        ("error", "missing-section", None),  # Success Criteria
        ("error", "missing-field", None),  # owner is blank
        ("warning", "unresolved-link", 9),  # [[Import flow]]
        ("warning", "marker", 12),  # [NEEDS CLARIFICATION: ...]
        ("warning", "marker", 16),  # TODO
        ("warning", "marker", 16),  # TBD
        ("info", "open-checkbox", None),
    ]
    messages = [f["message"] for f in review["findings"]]
    assert messages[0] == "Missing required section: Success Criteria"
    assert messages[1] == "Missing frontmatter field: owner"
    assert messages[3].startswith("[NEEDS CLARIFICATION: which page size?]: - **FR-001**")
    assert messages[6] == "1 open checkbox"
    assert review["summary"] == {"error": 2, "warning": 4, "info": 1}
    assert vault.records(ID, key="specs/export.md")[0].data == review


def test_a_complete_spec_passes(vault: WorkflowVault) -> None:
    vault.write({"Export.md": "x", "specs/ok.md": COMPLETE})
    [review] = vault.last_result(ID)["reviews"]
    assert (review["passed"], review["findings"]) == (True, [])


def test_only_spec_notes_are_reviewed_on_change_any_note_by_hand(vault: WorkflowVault) -> None:
    vault.write({"notes/plain.md": "# Plain\nTODO later"})
    assert vault.last_result(ID) == {"reviews": []}
    by_hand = vault.trigger(ID, {"path": "notes/plain.md"}).result
    assert [f["kind"] for f in by_hand["findings"]].count("missing-section") == 3
    assert vault.trigger(ID, {"path": "notes/none.md"}).status == "failed"
    vault.write({"specs/a.md": COMPLETE, "specs/b.md": DRAFT})
    assert [r["path"] for r in vault.trigger(ID, {}).result["reviews"]] == [
        "specs/a.md",
        "specs/b.md",
    ]


def test_sections_and_fields_come_from_settings(app: App) -> None:
    settings = {ID: {"required_sections": ["Goals"], "required_fields": ["reviewer"]}}
    with workflow_vault(app, ID, settings=settings) as vault:
        vault.write({"s.md": "---\ntype: spec\nreviewer: bo\n---\n## goals:\nship it\n"})
        [review] = vault.last_result(ID)["reviews"]
    assert (review["passed"], review["findings"]) == (True, [])


def test_the_review_note_is_written_and_starts_no_workflow(app: App) -> None:
    settings = {ID: {"write_review": True, "review_folder": "Reviews"}}
    with workflow_vault(app, ID, "file-change-logger", settings=settings) as vault:
        vault.write({"specs/export.md": DRAFT})
        [review] = vault.last_result(ID)["reviews"]
        assert review["reviewNote"] == "Reviews/specs/export review.md"
        text = (vault.root / "Reviews/specs/export review.md").read_text()
        assert text.startswith("---\ntype: review\n---\n# Review of [[specs/export]]")
        assert "- **error** `Missing frontmatter field: owner`" in text
        runs = len(vault.runs(ID)) + len(vault.runs("file-change-logger"))
        vault.app.indexer.apply_paths(["Reviews/specs/export review.md"])  # the watcher's turn
        assert len(vault.runs(ID)) + len(vault.runs("file-change-logger")) == runs
