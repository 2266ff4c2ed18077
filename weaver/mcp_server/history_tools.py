"""A note's edits by Weaver (list_edits), undoing one (restore_edit), and who made the writes
(get_audit_log, for admins). Thin edges over `weaver.edits.history` and `weaver.edits.audit`.
list_edits only reads and is always offered; restore_edit writes and is not registered when the
settings say `read_only = true`; get_audit_log is in the "system" toolset, and answers only a
caller with the `weaver:admin` scope (the local user and the http_token have every scope).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from weaver.edits import history
from weaver.edits.audit import read_audit
from weaver.errors import WeaverError
from weaver.mcp_server.arguments import Filter, HistoryLimit, NotePath, Offset
from weaver.mcp_server.caller import current_caller
from weaver.mcp_server.catalog import tool
from weaver.mcp_server.schemas import WireModel
from weaver.mcp_server.write_tools import cache_sync
from weaver.paging import has_more
from weaver.runtime.state import ServerState


class EditItem(WireModel):
    edit_id: int = Field(description="restore_edit's editId")
    operation: str = Field(description="The tool or command that wrote (edit_file, move_file, ...)")
    at: str = Field(description="When it was written (ISO 8601, UTC)")
    old_hash: str | None = Field(description="The note's hash before; null: the edit created it")
    new_hash: str | None = Field(description="Its hash after; null: the edit removed or moved it")
    restorable: bool = Field(description="What it replaced is still kept")
    current: bool = Field(description="The note is exactly as this edit left it")


class EditsData(WireModel):
    path: str
    current_hash: str | None = Field(description="The note's hash now; null: no note there")
    edits: list[EditItem]
    total: int
    offset: int
    has_more: bool = Field(description="More edits: call again with offset + len(edits)")


class RestoreData(WireModel):
    path: str
    content_hash: str | None = Field(description="The note's hash now; null: it went to .trash")
    changed: bool
    restored_edit: int
    trash_path: str | None = Field(
        default=None, description="Where a note the edit had created went"
    )
    cache_synced: bool


class AuditEntryItem(WireModel):
    at: str = Field(description="When the write was journalled (ISO 8601, UTC)")
    caller_kind: str = Field(description="local, token (http_token), oauth, cli or workflow")
    client_id: str = Field(description="The client's stable id (an OAuth client id, a workflow)")
    client_name: str = Field(description="The name a person reads (an OAuth client's own)")
    tool: str = Field(description="The tool, command or workflow that wrote")
    path: str
    edit_id: int = Field(description="The edit history's entry (list_edits, restore_edit)")
    outcome: str = Field(description="written, skipped, failed; pending while it runs")
    detail: str | None = Field(description="Why a write was skipped or failed")


class AuditLogData(WireModel):
    entries: list[AuditEntryItem]
    total: int = Field(description="Entries matching the filters, over all pages")
    offset: int
    has_more: bool = Field(description="More entries: call again with offset + len(entries)")


class AdminOnlyError(WeaverError):
    """A tool for admins called by a client whose grant lacks `weaver:admin`."""


ADMIN_SCOPE = "weaver:admin"

LIST_EDITS = """A note's recent writes by Weaver, newest first: what restore_edit can undo.

The recent writes of one note by Weaver (any tool, workflow recovery or
`weaver` command), newest first, with what each replaced kept for 30 days: the edits
restore_edit can undo. `current` marks the edit the note is still exactly as. Notes edited in
Obsidian or elsewhere have no entries for those saves. A canvas's edits by edit_canvas are
listed (and undone) the same way, by its `.canvas` path. Example: {"path": "Projects/Weaver.md"}."""

RESTORE_EDIT = """Undo one of a note's edits by Weaver (from list_edits), putting the note back as
it was before it.

Undo one of a note's edits by Weaver: put the note back exactly as it was
before edit `editId` (from list_edits). A note the edit created goes to .trash; a note it
deleted comes back. By default the note must still be exactly as that edit left it, so
nothing written since is thrown away; to restore over later changes, pass the note's current
contentHash as `expectedHash`. The restore is itself an edit (listed, and undoable). Example:
{"path": "Projects/Weaver.md", "editId": 42}."""


@tool("A note's edits by Weaver", LIST_EDITS, toolset="edit")
def list_edits(
    state: ServerState, path: NotePath, limit: HistoryLimit = 20, offset: Offset = 0
) -> EditsData:
    found = history.list_edits(state.app, path, limit=limit, offset=offset)
    return EditsData(
        path=found.path,
        current_hash=found.current_hash,
        edits=[EditItem.model_validate(edit, from_attributes=True) for edit in found.edits],
        total=found.total,
        offset=offset,
        has_more=has_more(offset, len(found.edits), found.total),
    )


@tool("Undo an edit", RESTORE_EDIT, toolset="edit", writes=True, destructive=True, idempotent=False)
def restore_edit(
    state: ServerState,
    path: NotePath,
    editId: Annotated[int, Field(ge=1, description="The edit to undo, from list_edits")],
    expectedHash: Annotated[
        str | None,
        Field(description="The note's contentHash now, to restore over later changes"),
    ] = None,
) -> RestoreData:
    change = history.restore_edit(
        state.app, path, editId, expected_hash=expectedHash, sync=cache_sync(state)
    )
    return RestoreData(
        path=change.path,
        content_hash=change.content_hash or None,
        changed=change.changed,
        restored_edit=editId,
        trash_path=change.trash_path,
        cache_synced=change.cache_synced,
    )


GET_AUDIT_LOG = """Who changed what: every write by Weaver with its client, tool, note and edit
id, newest first (admins only).

Every write by Weaver, one entry per note, newest first: which client made it (`callerKind`
local, token, oauth, cli or workflow; `clientId`, `clientName`), with which `tool`, when, the
`editId` its edit history keeps (list_edits, restore_edit) and its `outcome` (written, skipped,
failed). Filters: `client` (an id or name), `note` (a path, or a folder ending in "/"),
`since` (an age such as "7d" or "12h", or an ISO date). Needs the weaver:admin scope. Example:
{"client": "Claude", "since": "7d"}."""


@tool("Audit log", GET_AUDIT_LOG, toolset="system", cache_hit=False, scope="admin")
def get_audit_log(
    state: ServerState,
    client: Annotated[Filter, Field(description="A client id or name")] = None,
    note: Annotated[Filter, Field(description="A note path, or a folder ending in '/'")] = None,
    since: Annotated[Filter, Field(description="An age (30m, 12h, 7d) or ISO date")] = None,
    limit: HistoryLimit = 50,
    offset: Offset = 0,
) -> AuditLogData:
    caller = current_caller()
    if not caller.has_scope(ADMIN_SCOPE):
        raise AdminOnlyError(
            f"Forbidden: get_audit_log needs the {ADMIN_SCOPE} scope, which client "
            f"{caller.name!r} was not granted (a client asks for it when it is authorized; "
            "scripts can use http_token)"
        )
    page = read_audit(
        state.app.db, client=client, note=note, since=since, limit=limit, offset=offset
    )
    return AuditLogData(
        entries=[AuditEntryItem.model_validate(item, from_attributes=True) for item in page.items],
        total=page.total,
        offset=offset,
        has_more=page.has_more,
    )
