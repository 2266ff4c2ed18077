"""The write tools: create_file, update_file, move_file, delete_file. Thin edges over
`weaver.edits.notes`; none is registered when the settings say `read_only = true`.

Each returns once the cache shows the change (`cacheSynced`), so a read tool called next sees
it. Hints: none is read-only; create_file only adds (not destructive); all four are
idempotent in effect, since repeating a call with the same arguments changes nothing more
(update writes the same bytes again or is refused by its expected hash; create, move and
delete find their work done and refuse or report it).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from weaver.edits import notes, templates
from weaver.edits.steps import CacheSync
from weaver.mcp_server.arguments import NotePath
from weaver.mcp_server.catalog import tool
from weaver.mcp_server.questions import ask_delete, ask_move
from weaver.mcp_server.schemas import WireModel
from weaver.runtime.cache_sync import sync_cache
from weaver.runtime.state import ServerState


class WriteData(WireModel):
    path: str
    content_hash: str = Field(
        description="sha256 of the note's bytes now: update_file's expectedHash"
    )
    size: int = Field(description="Bytes")
    changed: bool = Field(description="False when the note already had exactly this content")
    cache_synced: bool = Field(description="True when the cache already shows the change")


class RewrittenNote(WireModel):
    path: str
    links: int = Field(description="Links rewritten in this note")


class MoveData(WireModel):
    path: str = Field(description="The note's new path")
    old_path: str
    content_hash: str
    rewritten: list[RewrittenNote] = Field(description="Notes whose links now name the new path")
    failed: list[str] = Field(description="Notes edited meanwhile whose links were not rewritten")
    cache_synced: bool


class DeleteData(WireModel):
    path: str
    deleted: bool = Field(description="True: the note is in the trash")
    trash_path: str = Field(description="Where the note went, to restore it from")
    cache_synced: bool


# Obsidian's list properties: a number or an object under them is no tag, alias or class, and
# a note written with one would be indexed without them (or read differently by Obsidian).
LIST_PROPERTIES = ("tags", "aliases", "cssclasses")


def check_list_properties(frontmatter: dict[str, Any] | None) -> dict[str, Any] | None:
    """Refuse `{"tags": 5}`: the list properties take a list of strings, one string, or null."""
    for key, value in (frontmatter or {}).items():
        if key.casefold() not in LIST_PROPERTIES or value is None or isinstance(value, str):
            continue
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError(
                f"{key} must be a list of strings, one string or null, not {value!r}"[:200]
            )
    return frontmatter


Frontmatter = Annotated[
    dict[str, Any] | None,
    Field(description="Frontmatter keys to set (merged into the existing; null deletes a key)"),
    AfterValidator(check_list_properties),
]
Tags = Annotated[
    list[str] | None,
    Field(max_length=100, description="The note's frontmatter tags ('#' optional); [] removes"),
]

CREATE_FILE = """Create a new note, from text or a template, with frontmatter and tags; never
overwrites.

`content` is the markdown text; it may carry its own frontmatter block. `frontmatter` (an
object) and `tags` (a list) are written into the frontmatter block. Folders are created as
needed. The file is written atomically and the cache updated before the answer, which gives
the note's `contentHash`. `template` starts the note from a note of the templates folder
(.obsidian/templates.json), with {{title}}, {{date}}, {{time}} (and {{date:FORMAT}}) filled as
Obsidian's Templates plugin fills them; `content` then follows it. Example: {"path":
"ideas/Graph search.md", "content": "# Graph search\\nSee [[Home]].", "tags": ["idea"]}."""

UPDATE_FILE = """Change an existing note: replace its content, patch its frontmatter, set its tags.
Pass get_file's contentHash as expectedHash.

`content` replaces the text: the body only, keeping the frontmatter, unless it carries a
frontmatter block of its own. `frontmatter` merges keys into the frontmatter (null deletes a
key); `tags` replaces the frontmatter tags (inline #tags in the body stay). Pass
`expectedHash`, the `contentHash` from get_file or an earlier write, so that if the note was
edited meanwhile (say, in Obsidian) the update is refused and nothing is lost; read it again
and retry. Example: {"path": "ideas/Graph search.md", "frontmatter": {"status": "draft"},
"expectedHash": "9f2c..."}."""

MOVE_FILE = """Rename or move a note, rewriting every link to it across the vault as Obsidian does.

Rename or move a note, rewriting every link to it across the vault, as
Obsidian does: wikilinks and embeds (keeping #heading, #^block and |alias), markdown links
(keeping percent-encoding and relative paths) and frontmatter links, each in the shortest form
that still finds the note. Links in the moved note that the move would break are fixed too,
and canvas cards showing the note show it at its new path.
`newPath` is the new vault-relative path, or a folder ending in '/' to keep the file name.
Fails if a file exists there. Returns the notes (and canvases) rewritten and how many links
(or cards) in each. A move rewriting links in many notes (`confirm_move_notes`) is confirmed
by the user first, as delete_file is.
Example: {"path": "inbox/Idea.md", "newPath": "projects/"}."""

DELETE_FILE = """Delete a note by moving it to the vault's .trash folder, where it can be restored
from.

Delete a note by moving it to the vault's .trash folder (Obsidian's trash),
where it can be restored from; an earlier trashed file of the same name is never overwritten.
Links to it become broken links. Fails with "File not found" (and the notes it may mean) when
there is no such note. The user is asked to confirm first, shown the notes whose links will
break, when the client supports elicitation; a "no" changes nothing and answers "Declined by
the user". A client that cannot ask is allowed or refused by the server's `confirm_destructive`
setting.
Example: {"path": "inbox/old draft.md"}."""


def cache_sync(state: ServerState) -> CacheSync:
    """How a writing tool brings the cache along before it answers: at once while this process
    holds the writer lock (asked at the moment of the sync), else by waiting for the writer."""

    def sync(expected: Mapping[str, str | None]) -> bool:
        return sync_cache(state.app, expected, holds_writer=state.writer)

    return sync


def written(result: notes.Written) -> WriteData:
    return WriteData(
        path=result.path,
        content_hash=result.content_hash,
        size=result.size,
        changed=result.changed,
        cache_synced=result.cache_synced,
    )


@tool("Create note", CREATE_FILE, toolset="edit", writes=True)
def create_file(
    state: ServerState,
    path: NotePath,
    content: Annotated[str, Field(description="Markdown text of the note")] = "",
    frontmatter: Frontmatter = None,
    tags: Tags = None,
    template: Annotated[
        str | None,
        Field(description="A note of the templates folder to start from, e.g. 'Meeting'"),
    ] = None,
) -> WriteData:
    app = state.app
    text = content
    if template is not None:
        now = dt.datetime.now().astimezone()
        filled = templates.render_template_note(app, template, path, now)
        text = filled + ("\n" + content if content and filled else content)
    return written(notes.create_note(app, path, text, frontmatter, tags, cache_sync(state)))


@tool("Update note", UPDATE_FILE, toolset="edit", writes=True, destructive=True)
def update_file(
    state: ServerState,
    path: NotePath,
    content: Annotated[
        str | None, Field(description="New text (the body, unless it has frontmatter)")
    ] = None,
    frontmatter: Frontmatter = None,
    tags: Tags = None,
    expectedHash: Annotated[
        str | None, Field(description="contentHash the note must still have, else refused")
    ] = None,
) -> WriteData:
    result = notes.update_note(
        state.app,
        path,
        content=content,
        frontmatter=frontmatter,
        tags=tags,
        expected_hash=expectedHash,
        sync=cache_sync(state),
    )
    return written(result)


@tool("Move note", MOVE_FILE, toolset="edit", writes=True, destructive=True, confirm=ask_move)
def move_file(
    state: ServerState,
    path: NotePath,
    newPath: Annotated[
        str, Field(description="New path relative to the vault root, or a folder + '/'")
    ],
) -> MoveData:
    result = notes.move_note(state.app, path, newPath, cache_sync(state))
    return MoveData(
        path=result.path,
        old_path=result.old_path,
        content_hash=result.content_hash,
        rewritten=[RewrittenNote(path=p, links=n) for p, n in result.rewritten.items()],
        failed=list(result.failed),
        cache_synced=result.cache_synced,
    )


@tool("Delete note", DELETE_FILE, toolset="edit", writes=True, destructive=True, confirm=ask_delete)
def delete_file(state: ServerState, path: NotePath) -> DeleteData:
    result = notes.delete_note(state.app, path, cache_sync(state))
    return DeleteData(
        path=result.path,
        deleted=True,
        trash_path=result.trash_path,
        cache_synced=result.cache_synced,
    )
