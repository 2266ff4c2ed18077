"""Who may do what, at the edge: a caller's scopes decide which tools it sees and may call,
and the first `[[access]]` rule naming it decides which notes it may read and write.

- **Scopes.** A tool needs one (`ToolSpec.required_scope`): `weaver:read` to read,
  `weaver:write` to change notes, `weaver:workflows` to run workflows, `weaver:admin` for
  the owner's tools. A caller has the scopes its token was granted (local callers and
  `http_token` have all), less what its rule's `scopes` leave out.
- **Folders.** Every argument naming a note (`PATH_ARGUMENTS`) is checked before the tool
  runs: against the rule's `write` globs where the tool writes it, else its `read` globs. An
  edit touching notes no argument names (a tag rename, the links a move rewrites, the note
  of a date's period) has them checked first too, by a dry run (`touching_refusal`), before
  it asks the person to confirm or changes anything. Answers are filtered in one
  place (`filter_answer`): a row naming a note outside the read globs is dropped; the few
  tools whose answers cannot be filtered so (`UNFILTERABLE`) are withheld from a caller
  whose reading is limited.
- A caller no rule names, and the local user, may do everything (as before rules existed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from weaver.config import SCOPE_PREFIX, Settings
from weaver.edits import notes, periodic
from weaver.edits import tags as tag_edits
from weaver.errors import WeaverError
from weaver.mcp_server.caller import Caller, current_caller
from weaver.path_globs import PathGlobs
from weaver.runtime.app import App
from weaver.runtime.oauth_server import SCOPES

# An argument naming a note or a folder (or a list of them), and whether a tool that
# writes writes it (True) or only reads it (a template, a card's note).
PATH_ARGUMENTS: Mapping[str, bool] = {
    "path": True,
    "paths": True,
    "newPath": True,
    "source": False,
    "target": False,
    "template": False,
    "file": False,
}
# Arguments narrowing a listing to a folder: not refused, the answer is filtered anyway.
FOLDER_ARGUMENTS = frozenset({"directory", "folder", "note"})  # get_audit_log's `note`
# Named like paths, but not paths: a heading or block inside a canvas card's note.
NOT_PATH_ARGUMENTS = frozenset({"subpath"})

# Keys of an answer's rows that name a note: a row with any outside the read globs is left out.
ROW_PATH_KEYS = ("path", "source", "target", "via")
# A bare string in a list is taken for a vault path when it ends in a file's extension (tags,
# names and task text do not: a tag has no '.', the others have spaces or no extension).
PATH_ITEM = re.compile(r"[^\s#][^\n]*\.[A-Za-z0-9]{1,10}")

# Tools whose answers are counts, folders or chains over the whole vault, which no row
# filter can make safe: a caller that may read only some folders does not get them.
UNFILTERABLE: Mapping[str, str] = {
    "get_stats": "its counts and folders cover the whole vault",
    "list_tags": "its tag counts cover the whole vault",
    "list_folders": "it lists every folder",
    "find_path": "a path between two notes may pass through notes it may not read",
    "get_workflow_records": "workflow records name notes anywhere in the vault",
    "get_workflow_history": "workflow runs name notes anywhere in the vault",
    "get_workflow_status": "workflow runs name notes anywhere in the vault",
    "get_audit_log": "the audit log names notes anywhere in the vault",
}
# Appends to the note of a date's period, whose path the tool works out.
PERIODIC_APPENDS = frozenset({"append_to_daily_note", "append_to_periodic_note"})
# Workflows write where they were written to: a caller that may write only some folders
# cannot start them.
UNBOUNDED_WRITES = frozenset({"trigger_workflow"})


@dataclass(frozen=True)
class Grant:
    """What one caller may do: its scopes, and the folders it may read and write (None: all),
    with the rule that says so, as refusals name it."""

    caller: Caller
    scopes: frozenset[str]
    read: PathGlobs | None = None
    write: PathGlobs | None = None
    rule: str = ""
    capped: frozenset[str] = frozenset()  # scopes the token has and the rule takes away

    def may_read(self, path: str) -> bool:
        return self.read is None or self.read.matches(path)

    def may_write(self, path: str) -> bool:
        return self.write is None or self.write.matches(path)

    def refuse_read(self, what: str, path: str) -> str:
        assert self.read is not None
        return (
            f"Access denied: {what} {path!r} is outside the folders this client may read "
            f"({self.rule}: read = [{self.read.shown()}])"
        )

    def refuse_write(self, what: str, paths: list[str], named_by_caller: bool = False) -> str:
        assert self.write is not None
        # Notes it may not read are counted, never named, unless it named them itself.
        named = [repr(p) for p in paths if named_by_caller or self.may_read(p)]
        unnamed = len(paths) - len(named)
        shown = ", ".join(named[:5]) + (" ..." if len(named) > 5 else "")
        if unnamed:
            notes = f"{unnamed} note{'s' if unnamed > 1 else ''} it may not read"
            shown = f"{shown} and {notes}" if shown else notes
        return (
            f"Access denied: {what} {shown} is outside the folders this client may write "
            f"({self.rule}: write = [{self.write.shown()}]); nothing was changed"
        )


def grant_for(settings: Settings, caller: Caller) -> Grant:
    """The grant of `caller`: all for the local user; else by the first rule naming it."""
    if caller.kind == "local":
        return Grant(caller, caller.scopes)
    for index, rule in enumerate(settings.access):
        if not rule.names(caller.kind, caller.client_id, caller.name):
            continue
        scopes = caller.scopes if rule.scopes is None else caller.scopes & set(rule.scopes)
        read, write = rule.read_globs, rule.write_globs
        return Grant(
            caller,
            frozenset(scopes),
            None if read.everything else read,
            None if write.everything else write,
            f"the access rule access[{index}] for client {rule.client!r}",
            frozenset(caller.scopes - scopes),
        )
    return Grant(caller, caller.scopes)


def current_grant(settings: Settings) -> Grant:
    return grant_for(settings, current_caller())


def scope_refusal(tool: str, scope: str, grant: Grant) -> str | None:
    """Why the caller may not use a tool needing `scope`, or None."""
    if scope in grant.scopes:
        return None
    if scope in grant.capped:
        return (
            f"Access denied: {tool} needs the scope {scope!r}, which {grant.rule} leaves out "
            "(its `scopes` in the server's config): the vault's owner can add it there"
        )
    held = ", ".join(sorted(grant.scopes)) or "none"
    return (
        f"Access denied: {tool} needs the scope {scope!r}, which client {grant.caller.name!r} "
        f"was not granted (it has: {held}): authorize the client again and grant {scope!r} on "
        "the consent page"
    )


def tool_refusal(tool: str, scope: str, grant: Grant) -> str | None:
    """Why the caller may neither see nor call `tool`, or None."""
    refusal = scope_refusal(tool, scope, grant)
    if refusal is not None:
        return refusal
    if grant.read is not None and tool in UNFILTERABLE:
        return (
            f"Access denied: {tool} is not offered to this client: {UNFILTERABLE[tool]}, and "
            f"{grant.rule} lets it read only [{grant.read.shown()}]"
        )
    if grant.write is not None and tool in UNBOUNDED_WRITES:
        return (
            f"Access denied: {tool} is not offered to this client: workflows change notes "
            f"anywhere, and {grant.rule} lets it write only [{grant.write.shown()}]"
        )
    return None


def argument_refusal(grant: Grant, writes: bool, arguments: Mapping[str, Any]) -> str | None:
    """Why the caller may not name the notes in these arguments, or None. Values that are not
    text are left to the tool's own validation."""
    for name, written in PATH_ARGUMENTS.items():
        paths = _texts(arguments.get(name))
        if writes and written and grant.write is not None:
            outside = [p for p in paths if not grant.may_write(p)]
            if outside:
                return grant.refuse_write(name, outside, named_by_caller=True)
        for path in paths:
            if not grant.may_read(path):
                return grant.refuse_read(name, path)
    return None


def _texts(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def touching_refusal(app: App, grant: Grant, tool: str, arguments: Mapping[str, Any]) -> str | None:
    """Why the caller may not make an edit reaching notes no argument names, or None: the
    notes a tag rename changes, those whose links a move rewrites. Checked before the call
    runs (and before it asks the person to confirm it); a call its dry run finds wrong is
    left to answer its own error."""
    if grant.write is None:
        return None
    try:
        if tool == "rename_tag" and not arguments.get("dryRun"):
            plan = tag_edits.rename_tag(
                app, arguments["tag"], arguments["newTag"], dry_run=True, sync=lambda _: True
            )
            what, touched = "rename_tag would change", {c.path for c in plan.changes}
        elif tool == "move_file":
            preview = notes.preview_move(app, arguments["path"], arguments["newPath"])
            what, touched = "move_file would rewrite links in", set(preview.rewrites)
        elif tool in PERIODIC_APPENDS:
            period = arguments.get("period", "day")
            path = periodic.periodic_path(app, period, arguments.get("date"))
            # Its path follows from the date asked: the refusal may name it.
            return (
                None
                if grant.may_write(path)
                else grant.refuse_write(f"the {period}'s note", [path], named_by_caller=True)
            )
        else:
            return None
    except (WeaverError, KeyError, TypeError, AttributeError, ValueError):
        return None
    outside = sorted(path for path in touched if not grant.may_write(path))
    return grant.refuse_write(what, outside) if outside else None


def filter_answer(grant: Grant, envelope: dict[str, Any]) -> dict[str, Any]:
    """The envelope without what the caller may not read: rows naming such a note are left
    out; an answer about one such note (its `path`) becomes a refusal."""
    data = envelope.get("data")
    if grant.read is None or not envelope.get("success") or not isinstance(data, dict):
        return envelope
    path = data.get("path")
    if isinstance(path, str) and not grant.may_read(path):
        assert grant.read is not None
        refusal = (  # without the path: a random or daily note's name is not the caller's
            "Access denied: the answer is about a note outside the folders this client may "
            f"read ({grant.rule}: read = [{grant.read.shown()}])"
        )
        return {
            "success": False,
            "error": refusal,
            "metadata": envelope.get("metadata", {}),
        }
    return envelope | {"data": _readable(grant, data)}


def _readable(grant: Grant, value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _readable(grant, item) for key, item in value.items()}
    if isinstance(value, list):
        return [_readable(grant, item) for item in value if not _hidden(grant, item)]
    return value


def _hidden(grant: Grant, row: object) -> bool:
    if isinstance(row, str):
        return PATH_ITEM.fullmatch(row) is not None and not grant.may_read(row)
    if not isinstance(row, dict):
        return False
    # A graph node's `id` is its note's path; other ids (canvas cards, runs) are not paths.
    node = row.get("id")
    return any(
        isinstance(row.get(key), str) and not grant.may_read(row[key]) for key in ROW_PATH_KEYS
    ) or (isinstance(node, str) and _hidden(grant, node))


def scope_of(name: str) -> str:
    """`read` -> `weaver:read`: a scope as tokens carry it."""
    scope = SCOPE_PREFIX + name.removeprefix(SCOPE_PREFIX)
    assert scope in SCOPES, scope
    return scope


def reading_refusal(settings: Settings, what: str, note: str | None = None) -> str | None:
    """Why the caller may not read a resource or prompt (`what`), or None: it needs
    `weaver:read`; one drawn from the whole vault (no `note`) needs every folder too."""
    grant = current_grant(settings)
    refusal = scope_refusal(what, scope_of("read"), grant)
    if refusal is not None or grant.read is None:
        return refusal
    if note is not None:
        return None if grant.may_read(note) else grant.refuse_read("the note", note)
    return (
        f"Access denied: {what} draws on the whole vault, and {grant.rule} lets this client "
        f"read only [{grant.read.shown()}]"
    )
