"""Editing tools: edits inside a note (edit_file, replace_in_file, update_frontmatter), tags
(add_tags, remove_tags, rename_tag), daily notes (get_daily_note, append_to_daily_note), and
get_files_content. Thin edges over `weaver.edits`. The writing tools are not registered when
the settings say `read_only = true`; get_files_content and get_daily_note only read.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from weaver.edits import daily, notes, patches
from weaver.edits import tags as tag_edits
from weaver.errors import VaultError
from weaver.markdown import patch
from weaver.mcp_server.arguments import Limit, NotePath, Offset
from weaver.mcp_server.catalog import tool
from weaver.mcp_server.questions import ask_remove_tags, ask_rename_tag
from weaver.mcp_server.schemas import WireModel
from weaver.mcp_server.sizing import (
    TEXT_TOKEN_BUDGET,
    estimate_json_string_tokens,
    fit_text,
    fitted,
)
from weaver.mcp_server.write_tools import cache_sync
from weaver.paging import has_more
from weaver.runtime.app import App
from weaver.runtime.state import ServerState

MAX_FILES = 50
# About 20,000 tokens: the whole answer of get_files_content stays under the 25,000 bound.
MAX_CHANGES = 500
# A changed line is shown up to this many characters: 200 changes of long lines stay small.
MAX_LINE_CHARS = 300
# A bulk edit answers a summary with this many changes and unwritten notes unless `details`
# asks for every one: 5 long lines before and after, 10 notes' reasons, stay under 10,000
# characters however many notes change.
PREVIEW_CHANGES = 5
PREVIEW_OUTCOMES = 10

ExpectedHash = Annotated[
    str | None,
    Field(description="contentHash the note must still have (from get_file), else refused"),
]


class PatchData(WireModel):
    path: str
    content_hash: str = Field(description="sha256 of the note now: the next expectedHash")
    size: int
    changed: bool = Field(description="False when the note already read exactly so")
    matches: int = Field(description="Matches replaced (replace_in_file); else 1 if changed")
    lines_added: int
    lines_removed: int
    diff: list[str] = Field(description="The first changed lines, '+' added and '-' removed")
    cache_synced: bool


class TaggedNote(WireModel):
    path: str
    content_hash: str | None = None
    changed: bool = False
    error: str | None = Field(default=None, description="Why this note was not changed")


class TagEditData(WireModel):
    notes: list[TaggedNote]
    cache_synced: bool


class TagLineChange(WireModel):
    path: str
    line: int = Field(description="1-based line")
    before: str = Field(description="The line before (long lines clipped with …)")
    after: str


class TagNoteOutcome(WireModel):
    path: str
    status: str = Field(description="planned (dry run), written, skipped or failed")
    detail: str | None = None


class RenameTagData(WireModel):
    summary: str = Field(description="What changed (or would), counted, and how to see it all")
    tag: str
    new_tag: str
    dry_run: bool
    notes: int = Field(description="Notes that change (or would)")
    total_changes: int = Field(description="Lines that change (or would)")
    changes: list[TagLineChange] = Field(
        description="The first few changed lines; with `details`, one page of them all"
    )
    offset: int
    has_more: bool = Field(description="More changes than listed")
    written: int
    not_written: int = Field(description="Notes skipped or failed (unreadable, in a dry run)")
    outcomes: list[TagNoteOutcome] = Field(
        description="The notes not written, with why: the first few, or all with `details`"
    )
    journal_id: int | None
    cache_synced: bool


class DailyNoteData(WireModel):
    path: str
    date: str
    exists: bool
    content: str | None = Field(description="The text, within the answer's bound (see truncated)")
    content_hash: str | None
    truncated: bool = Field(description="Longer: read the rest with get_file_content (offset)")


class DailyAppendData(PatchData):
    created: bool = Field(description="The daily note was made (from its template) first")


class FileContentItem(WireModel):
    path: str
    section: str | None = None
    content: str | None = None
    content_hash: str | None = Field(default=None, description="sha256 of the whole note")
    truncated: bool = False
    error: str | None = None


class FilesContentData(WireModel):
    files: list[FileContentItem]
    truncated: bool = Field(
        description="Answer size reached: some contents were cut; read them with "
        "get_file_content (offset) or fewer paths per call"
    )


EDIT_FILE = """Add to or change part of a note without sending all of it: append, prepend, or
before, after or in place of a heading's section or a ^block.

`position`: "append" (end of the note) or "prepend" (top of the body, after the frontmatter);
or, with exactly one target, "before" (top of the section, just under its heading, or the
line before the block), "after" (end of the heading's own text, before its first sub-heading,
or the line after the block), "end_of_section" (a heading only: after all its sub-sections) or
"replace" (the whole section's text, keeping its heading; the block's text, keeping its ^id).
`heading` is a heading path joined by '::' ("Project::Tasks"), matched as Obsidian matches
[[Note#Heading]] (case and # | ^ : [ ] ignored); `block` a block id ("^abc1" or "abc1"). A
missing target is an error listing the note's headings or blocks. Answers the new contentHash
and the changed lines. Example: {"path": "Projects/Weaver.md", "position": "after", "heading":
"Weaver::Tasks", "content": "- [ ] write docs"}."""

REPLACE_IN_FILE = """Find and replace text (literal or regular expression) in one note.

Find and replace in one note, literal text or a regular expression
(`regex`: true; the replacement may use \\1 or \\g<name>). Only the body unless
`includeFrontmatter`. Zero matches is an error unless `allowNoMatch`. A pattern that runs
longer than a second is refused. Answers how many matches were replaced. Example: {"path":
"Inbox.md", "find": "TODO", "replace": "DONE"}."""

UPDATE_FRONTMATTER = """Set, merge or delete frontmatter keys of a note, keeping the rest as the
user wrote it.

Change frontmatter keys of a note, keeping everything else as the
user wrote it (comments, key order, quoting, layout). `set`: keys to set (null deletes);
`merge`: lists gain the items they lack (tags and aliases compared case-insensitively), objects
merge key by key; `delete`: keys to remove. Tags are written as Obsidian writes them. A note
whose frontmatter is invalid YAML is refused with the error and its line. Example: {"path":
"Projects/Weaver.md", "set": {"status": "active"}, "merge": {"tags": ["mcp"]}}."""

ADD_TAGS = """Add tags to the frontmatter of several notes.

Add tags to the frontmatter `tags` of each note given (those it lacks; '#'
optional). Per-note errors do not stop the rest. Example: {"paths": ["a.md", "b.md"], "tags":
["project/weaver"]}."""

REMOVE_TAGS = """Remove tags from the frontmatter of several notes.

Remove tags from the frontmatter `tags` of each note given (case-insensitive;
inline #tags in the text stay). A removal changing more than one note is confirmed by the
user first, as rename_tag is. Example: {"paths": ["a.md"], "tags": ["draft"]}."""

RENAME_TAG = """Rename a tag across the whole vault (frontmatter and inline, nested tags too);
dryRun shows what would change.

Rename a tag across the whole vault, as Obsidian's Tag Wrangler does: in
frontmatter (list, single and comma forms) and inline #tags, nested tags too (#from/x ->
#to/x), case-insensitively, never in code, comments or URLs; renaming into a tag that exists
merges them. `dryRun: true` answers what would change without writing. The answer is a summary
with the first few changed lines; `details: true` pages through every one. Each note is
written atomically and only if unchanged since it was read (else skipped and listed); the run
is journalled, so one interrupted is finished at the next start. The user is asked to confirm
first, shown the notes that change, when the client supports elicitation (a "no" changes
nothing); else the server's `confirm_destructive` setting decides. Example: {"tag": "proj",
"newTag": "project", "dryRun": true}."""

GET_DAILY_NOTE = """The daily note of a date (default today), found by the vault's Daily notes
settings, with its content.

The daily note of a date (default today), located by the vault's Daily
notes settings (.obsidian/daily-notes.json: folder, moment.js date format; the Periodic Notes
plugin's when it enables daily notes): its path, whether it exists, and its content and
contentHash when it does. Example: {"date": "2026-11-26"}."""

APPEND_TO_DAILY_NOTE = """Append text to the daily note of a date (default today), creating it from
the template if needed.

Append text to the daily note of a date (default today), creating
the note first from the Daily notes template (with {{date}}, {{time}}, {{title}} filled) when
it does not exist yet. Example: {"text": "- 14:00 call with Ana"}."""

GET_FILES_CONTENT = """Read several notes, or sections of them, in one call, each with its
contentHash.

Read several notes (or sections of them) in one call, each with its
contentHash. Items are paths, or {"path", "section"} with a heading path ("Project::Tasks").
A path that fails answers its own error; the others still come. The answer is bounded (about
20,000 tokens of text): beyond it contents are cut and `truncated` is set; read the rest with
get_file_content. Example: {"paths": ["Home.md", {"path": "Projects/Weaver.md", "section":
"Tasks"}]}."""


Paths = Annotated[list[str], Field(min_length=1, max_length=500, description="Note paths")]
TagList = Annotated[list[str], Field(min_length=1, max_length=100, description="Tags")]


class FileRequest(WireModel):
    path: str
    section: str | None = Field(default=None, description="Heading path, e.g. 'Project::Tasks'")


def clip(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"


def patch_data(result: patches.Patched) -> PatchData:
    return PatchData(
        path=result.path,
        content_hash=result.content_hash,
        size=result.size,
        changed=result.changed,
        matches=result.matches,
        lines_added=result.diff.lines_added,
        lines_removed=result.diff.lines_removed,
        diff=[clip(line) for line in result.diff.preview],
        cache_synced=result.cache_synced,
    )


@tool("Read several notes", GET_FILES_CONTENT, toolset="notes", cache_hit=False)
def get_files_content(
    state: ServerState,
    paths: Annotated[
        list[str | FileRequest],
        Field(min_length=1, max_length=MAX_FILES, description="Note paths or {path, section}"),
    ],
) -> FilesContentData:
    budget = TEXT_TOKEN_BUDGET  # tokens, for all the notes' text together
    items = []
    for request in paths:
        item = _read_one(state.app, request, budget)
        budget -= estimate_json_string_tokens(item.content or "")
        items.append(item)
    return FilesContentData(files=items, truncated=any(i.truncated for i in items))


@tool("Daily note", GET_DAILY_NOTE, toolset="notes", cache_hit=False)
def get_daily_note(
    state: ServerState,
    date: Annotated[str | None, Field(description="YYYY-MM-DD; default today")] = None,
) -> DailyNoteData:
    note = daily.get_daily_note(state.app, date)
    content, truncated = fitted(note.content)
    return DailyNoteData(
        path=note.path,
        date=note.date,
        exists=note.exists,
        content=content,
        content_hash=note.content_hash,
        truncated=truncated,
    )


def _read_one(app: App, request: str | FileRequest, budget: int) -> FileContentItem:
    path, section = (request, None) if isinstance(request, str) else (request.path, request.section)
    try:
        clean = app.vault.check_note_path(path)
        data = app.vault.read_note(clean)
        text, _ = patches.decode_text(clean, data)
        if section is not None:
            _, body = patch.split_body(text)
            span = patch.find_section(body, section)
            text = body[span.start : span.end]
    except (VaultError, patch.TextEditError) as exc:
        return FileContentItem(path=path, section=section, error=str(exc))
    except OSError as exc:
        return FileContentItem(
            path=path, section=section, error=f"Cannot read file: {exc.strerror}"
        )
    keep = fit_text(text, max(budget, 0))
    return FileContentItem(
        path=clean,
        section=section,
        content=text[:keep],
        content_hash=notes.sha256(data),
        truncated=keep < len(text),
    )


@tool(
    "Edit part of a note",
    EDIT_FILE,
    toolset="edit",
    writes=True,
    destructive=True,
    idempotent=False,
)
def edit_file(
    state: ServerState,
    path: NotePath,
    position: Annotated[
        Literal["append", "prepend", "before", "after", "end_of_section", "replace"],
        Field(description="Where the content goes (see the tool's description)"),
    ],
    content: Annotated[str, Field(description="Markdown text to insert or put in place")],
    heading: Annotated[str | None, Field(description="Heading path, e.g. 'Project::Tasks'")] = None,
    block: Annotated[str | None, Field(description="Block id, e.g. '^abc1'")] = None,
    expectedHash: ExpectedHash = None,
) -> PatchData:
    transform = patches.insert_transform(position, content, heading, block)
    return _patch(state, path, transform, expectedHash)


@tool(
    "Find and replace in a note",
    REPLACE_IN_FILE,
    toolset="edit",
    writes=True,
    destructive=True,
    idempotent=False,
)
def replace_in_file(
    state: ServerState,
    path: NotePath,
    find: Annotated[str, Field(min_length=1, description="Text or pattern to find")],
    replace: Annotated[str, Field(description="Replacement ('' deletes)")],
    regex: Annotated[bool, Field(description="`find` is a regular expression")] = False,
    ignoreCase: bool = False,
    includeFrontmatter: bool = False,
    allowNoMatch: Annotated[bool, Field(description="Zero matches is not an error")] = False,
    expectedHash: ExpectedHash = None,
) -> PatchData:
    change = patches.Replace(find, replace, regex, ignoreCase, includeFrontmatter, allowNoMatch)
    return _patch(state, path, patches.replace_transform(change), expectedHash)


@tool("Update frontmatter", UPDATE_FRONTMATTER, toolset="edit", writes=True, destructive=True)
def update_frontmatter(
    state: ServerState,
    path: NotePath,
    set: Annotated[
        dict[str, Any] | None, Field(description="Keys to set; null deletes a key")
    ] = None,
    merge: Annotated[
        dict[str, Any] | None, Field(description="Lists gain missing items; objects merge")
    ] = None,
    delete: Annotated[list[str] | None, Field(description="Keys to remove")] = None,
    expectedHash: ExpectedHash = None,
) -> PatchData:
    change = patches.FrontmatterChange(set or {}, merge or {}, delete or ())
    return _patch(state, path, patches.frontmatter_transform(change), expectedHash)


def _patch(
    state: ServerState, path: str, transform: patches.Transform, expected_hash: str | None
) -> PatchData:
    sync = cache_sync(state)
    result = patches.patch_note(state.app, path, transform, expected_hash=expected_hash, sync=sync)
    return patch_data(result)


@tool("Add tags", ADD_TAGS, toolset="tags", writes=True, rate_class="bulk")
def add_tags(state: ServerState, paths: Paths, tags: TagList) -> TagEditData:
    return _tag_edit(state, paths, add=tags, remove=[])


@tool(
    "Remove tags",
    REMOVE_TAGS,
    toolset="tags",
    writes=True,
    destructive=True,
    confirm=ask_remove_tags,
    rate_class="bulk",
)
def remove_tags(state: ServerState, paths: Paths, tags: TagList) -> TagEditData:
    return _tag_edit(state, paths, add=[], remove=tags)


def _tag_edit(
    state: ServerState, paths: list[str], add: list[str], remove: list[str]
) -> TagEditData:
    results = tag_edits.change_note_tags(
        state.app, paths, add=add, remove=remove, sync=cache_sync(state)
    )
    items = [
        TaggedNote(path=r.path, error=r.error)
        if r.patched is None
        else TaggedNote(path=r.path, content_hash=r.patched.content_hash, changed=r.patched.changed)
        for r in results
    ]
    synced = all(r.patched.cache_synced for r in results if r.patched is not None)
    return TagEditData(notes=items, cache_synced=synced)


@tool(
    "Rename a tag everywhere",
    RENAME_TAG,
    toolset="tags",
    writes=True,
    destructive=True,
    confirm=ask_rename_tag,
    rate_class="bulk",
)
def rename_tag(
    state: ServerState,
    tag: Annotated[str, Field(description="The tag to rename ('#' optional)")],
    newTag: Annotated[str, Field(description="Its new name, spelled as it should be written")],
    dryRun: bool = False,
    details: Annotated[
        bool, Field(description="List every changed line, `limit` from `offset` on")
    ] = False,
    offset: Offset = 0,
    limit: Limit = 200,
) -> RenameTagData:
    result = tag_edits.rename_tag(state.app, tag, newTag, dry_run=dryRun, sync=cache_sync(state))
    if not details:
        offset, limit = 0, PREVIEW_CHANGES
    page = result.changes[offset : offset + limit]
    unwritten = [
        o for o in result.outcomes if o.status not in (tag_edits.PLANNED, tag_edits.WRITTEN)
    ]
    written = sum(o.status == tag_edits.WRITTEN for o in result.outcomes)
    more = has_more(offset, len(page), len(result.changes))
    return RenameTagData.model_validate(
        {
            "summary": rename_summary(result, written, len(unwritten), more and not details),
            "tag": result.old,
            "new_tag": result.new,
            "dry_run": result.dry_run,
            "notes": len({c.path for c in result.changes}),
            "total_changes": len(result.changes),
            "changes": [
                TagLineChange(path=c.path, line=c.line, before=clip(c.before), after=clip(c.after))
                for c in page
            ],
            "offset": offset,
            "has_more": more,
            "written": written,
            "not_written": len(unwritten),
            "outcomes": [
                TagNoteOutcome(path=o.path, status=o.status, detail=o.detail)
                for o in unwritten[: MAX_CHANGES if details else PREVIEW_OUTCOMES]
            ],
            "journal_id": result.journal_id,
            "cache_synced": result.cache_synced,
        }
    )


def rename_summary(result: tag_edits.TagRename, written: int, unwritten: int, cut: bool) -> str:
    """One paragraph an assistant can relay: what changed (or would), and how to see the rest."""
    lines, notes = len(result.changes), len({c.path for c in result.changes})
    rename = f"#{result.old} -> #{result.new}"
    if result.dry_run:
        said = f"Dry run: {rename} would change {lines} lines in {notes} notes; nothing written."
    else:
        said = f"{rename}: {lines} lines changed, {written} notes written."
    if unwritten:
        said += f" {unwritten} notes not written (see outcomes)."
    if cut:
        said += (
            f" The first {PREVIEW_CHANGES} changes are listed: call again with details: true "
            "(and offset, limit) for every one."
        )
    return said


@tool(
    "Append to the daily note",
    APPEND_TO_DAILY_NOTE,
    toolset="edit",
    writes=True,
    idempotent=False,
)
def append_to_daily_note(
    state: ServerState,
    text: Annotated[str, Field(description="Markdown to append")],
    date: Annotated[str | None, Field(description="YYYY-MM-DD; default today")] = None,
) -> DailyAppendData:
    result = daily.append_to_daily_note(state.app, text, date, cache_sync(state))
    return DailyAppendData(**dict(patch_data(result.patched)), created=result.created)
