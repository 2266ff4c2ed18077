"""`proof-spec-kit-review`: review a specification note before anyone builds from it.

Runs on every change of a note with `type: spec` (the `note_type` setting), and by hand:
`{"path": ...}` reviews that note whatever its type (the review is the result), `{}` every spec
note. Findings, each with a
severity and, where it has one, a 1-based line:

- error: a required section is missing (`required_sections`, default spec-kit's mandatory
  ones; a heading matches ignoring case, emphasis and a trailing remark such as
  "*(mandatory)*"), or a required frontmatter field is missing or blank (`required_fields`);
- warning: a link resolves to no note, or the text holds a TODO, TBD, FIXME, XXX or
  `[NEEDS CLARIFICATION: ...]` marker (outside code blocks);
- info: checkboxes still open.

A spec passes when it has no error. Each review is recorded (kind `review`, keyed by the spec's
path) and returned; with `write_review = true` it is also written as a note in `review_folder`,
through `ctx.vault`, so writing it starts no workflow.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from weaver.engine import (
    BrokenLink,
    FileTrigger,
    LoadedNote,
    NewRecord,
    NoteNotFoundError,
    OnFile,
    WorkflowContext,
    code,
    find_markers,
    missing_fields,
    missing_sections,
    note_link,
    workflow,
)

KIND = "review"
SEVERITIES = ("error", "warning", "info")
SPEC_KIT_SECTIONS = ["User Scenarios & Testing", "Requirements", "Success Criteria"]


class ReviewInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(
        default=None, description="The spec note to review; leave it out for every spec note"
    )


class ReviewSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    note_type: str = "spec"
    required_sections: list[str] = Field(default_factory=lambda: list(SPEC_KIT_SECTIONS))
    required_fields: list[str] = Field(default_factory=lambda: ["status", "owner"])
    write_review: bool = False
    review_folder: str = "Reviews"


@workflow(
    id="proof-spec-kit-review",
    name="Spec review",
    triggers=[OnFile("**", kinds=["add", "modify"])],
    input_model=ReviewInput,
    settings_model=ReviewSettings,
    timeout=300,
)
def review_specs(ctx: WorkflowContext[ReviewInput]) -> dict[str, Any]:
    """Review spec notes: required sections and fields, broken links, TODO markers, open
    checkboxes; findings with severity."""
    settings = ctx.settings or ReviewSettings()
    paths = specs_to_review(ctx, settings)
    notes = [note for path in paths if (note := ctx.load_note(path)) is not None]
    broken = ctx.broken_links([note.path for note in notes])
    reviews = [review(note, broken.get(note.path, []), settings) for note in notes]
    if settings.write_review:
        for item in reviews:
            item["reviewNote"] = write_review_note(ctx, item, settings.review_folder)
    ctx.records.extend(NewRecord(item["path"], item, KIND) for item in reviews)
    if ctx.input.path is not None and not isinstance(ctx.trigger, FileTrigger):
        # Asked for one note: its review is the answer, and its absence an error.
        if not reviews:
            raise NoteNotFoundError(paths[0])
        return reviews[0]
    return {"reviews": reviews}


def specs_to_review(ctx: WorkflowContext[ReviewInput], settings: ReviewSettings) -> list[str]:
    if not isinstance(ctx.trigger, FileTrigger):
        if ctx.input.path is not None:
            return [ctx.vault.vault.check_note_path(ctx.input.path)]
        return ctx.note_paths(settings.note_type)
    facts = ctx.note_facts(ctx.trigger.paths)
    wanted = settings.note_type.casefold()
    return sorted(p for p, fact in facts.items() if (fact.type or "").casefold() == wanted)


def review(note: LoadedNote, broken: list[BrokenLink], settings: ReviewSettings) -> dict[str, Any]:
    findings = [
        *section_findings(note, settings.required_sections),
        *field_findings(note, settings.required_fields),
        *link_findings(broken),
        *marker_findings(note),
        *task_findings(note),
    ]
    counts = Counter(finding["severity"] for finding in findings)
    return {
        "path": note.path,
        "title": note.parsed.title,
        "passed": counts["error"] == 0,
        "summary": {severity: counts[severity] for severity in SEVERITIES},
        "findings": findings,
        "reviewNote": None,
    }


def finding(severity: str, kind: str, message: str, line: int | None = None) -> dict[str, Any]:
    return {"severity": severity, "kind": kind, "message": message, "line": line}


def section_findings(note: LoadedNote, required: list[str]) -> list[dict[str, Any]]:
    return [
        finding("error", "missing-section", f"Missing required section: {name}")
        for name in missing_sections(note.parsed.headings, required)
    ]


def field_findings(note: LoadedNote, required: list[str]) -> list[dict[str, Any]]:
    return [
        finding("error", "missing-field", f"Missing frontmatter field: {name}")
        for name in missing_fields(note.parsed.frontmatter, required)
    ]


def link_findings(broken: list[BrokenLink]) -> list[dict[str, Any]]:
    return [
        finding(
            "warning",
            "unresolved-link",
            f"Link to {link.target!r} resolves to no note",
            link.line + 1,
        )
        for link in broken
    ]


def marker_findings(note: LoadedNote) -> list[dict[str, Any]]:
    return [
        finding("warning", "marker", f"{marker.text}: {marker.context}", marker.line)
        for marker in find_markers(note)
    ]


def task_findings(note: LoadedNote) -> list[dict[str, Any]]:
    open_tasks = note.parsed.tasks_open
    if not open_tasks:
        return []
    plural = "es" if open_tasks != 1 else ""
    return [finding("info", "open-checkbox", f"{open_tasks} open checkbox{plural}")]


def write_review_note(ctx: WorkflowContext[ReviewInput], item: dict[str, Any], folder: str) -> str:
    """`<folder>/<spec path> review.md`: mirroring the spec's folders keeps two specs of the
    same name apart."""
    stem = item["path"][:-3] if item["path"].lower().endswith(".md") else item["path"]
    path = f"{folder.strip('/')}/{stem} review.md" if folder.strip("/") else f"{stem} review.md"
    return ctx.vault.write_text(path, render_review(item))


def render_review(item: dict[str, Any]) -> str:
    verdict = "passes" if item["passed"] else "does not pass"
    summary = ", ".join(f"{count} {severity}" for severity, count in item["summary"].items())
    lines = [
        "---",
        "type: review",
        "---",
        f"# Review of {note_link(item['path'])}",
        "",
        f"The spec {verdict}: {summary}.",
    ]
    if item["findings"]:
        lines.append("")
    for entry in item["findings"]:
        where = f" (line {entry['line']})" if entry["line"] else ""
        lines.append(f"- **{entry['severity']}** {code(entry['message'])}{where}")
    return "\n".join(lines) + "\n"
