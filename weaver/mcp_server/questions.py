"""What a destructive call would change, worded for the person asked to confirm it: the
dry runs behind `@tool(confirm=...)` (see `confirmation`). Each answers None when the call
needs no confirmation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from weaver.edits import notes
from weaver.edits import tags as tag_edits
from weaver.mcp_server.access import current_grant
from weaver.runtime.state import ServerState

# The notes a question names; the rest are counted ("and 12 more"), keeping the question
# short enough to read on a phone.
NAMED_NOTES = 20


def ask_delete(state: ServerState, arguments: Mapping[str, Any]) -> str:
    """Every deletion is asked about: the note, and the notes whose links to it will break."""
    preview = notes.preview_delete(state.app, arguments["path"])
    said = (
        f"Delete the note {preview.path!r}? It goes to the vault's .trash folder, where it "
        "can be restored from."
    )
    linked = preview.linked_from
    if not linked:
        return f"{said} No note links to it."
    shown, hidden = _readable(state, linked)
    return (
        f"{said} {_notes(len(linked))} link to it; those links will be broken: "
        f"{_named(shown, hidden)}"
    )


def ask_move(state: ServerState, arguments: Mapping[str, Any]) -> str | None:
    """A move is asked about when it rewrites links in more than `confirm_move_notes` notes."""
    preview = notes.preview_move(state.app, arguments["path"], arguments["newPath"])
    rewrites = preview.rewrites
    if len(rewrites) <= state.app.settings.confirm_move_notes:
        return None
    links = sum(rewrites.values())
    shown, hidden = _readable(state, sorted(rewrites))
    named = [f"{path} ({rewrites[path]})" for path in shown]
    return (
        f"Move the note {preview.path!r} to {preview.new_path!r}? Links to it will be "
        f"rewritten in {_notes(len(rewrites))} ({links} links): {_named(named, hidden)}"
    )


def ask_rename_tag(state: ServerState, arguments: Mapping[str, Any]) -> str | None:
    """A tag rename across the vault is asked about unless it is a dry run or changes nothing."""
    if arguments.get("dryRun"):
        return None
    plan = tag_edits.rename_tag(
        state.app, arguments["tag"], arguments["newTag"], dry_run=True, sync=_no_sync
    )
    if not plan.changes:
        return None
    paths = sorted({change.path for change in plan.changes})
    shown, hidden = _readable(state, paths)
    return (
        f"Rename the tag #{plan.old} to #{plan.new} in every note? {len(plan.changes)} lines "
        f"change in {_notes(len(paths))}: {_named(shown, hidden)}"
    )


def ask_remove_tags(state: ServerState, arguments: Mapping[str, Any]) -> str | None:
    """A removal is asked about when it would change more than one note (a bulk edit)."""
    tags = arguments["tags"]
    changing = tag_edits.preview_note_tags(state.app, arguments["paths"], remove=tags)
    if len(changing) <= 1:
        return None
    named = ", ".join(f"#{tag.removeprefix('#')}" for tag in tags)
    return f"Remove {named} from the frontmatter of {_notes(len(changing))}? {_named(changing)}"


def _notes(count: int) -> str:
    return "1 note" if count == 1 else f"{count} notes"


def _readable(state: ServerState, paths: Sequence[str]) -> tuple[list[str], int]:
    """The paths the caller may read (its `access` rule), and how many others: the question
    goes to the client, which must not learn the names of notes outside its folders."""
    grant = current_grant(state.app.settings)
    shown = [path for path in paths if grant.may_read(path)]
    return shown, len(paths) - len(shown)


def _named(items: Sequence[str], hidden: int = 0) -> str:
    said = ", ".join(items[:NAMED_NOTES])
    more = len(items) - NAMED_NOTES
    if more > 0:
        said += f", and {more} more"
    if hidden:
        unread = f"{_notes(hidden)} this client may not read"
        said = f"{said}, and {unread}" if said else unread
    return f"{said}."


def _no_sync(expected: Mapping[str, str | None]) -> bool:
    return True  # a dry run writes nothing: nothing to bring the cache along to
