"""The cache's tables, as SQLAlchemy 2 models.

Alembic migrations own the schema (`alembic/versions/`); these models describe it, and a test
proves that upgrading from the first migration to head yields exactly these tables. Times are
integers, Unix epoch milliseconds, so every tool reports them the same way.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    false,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[str]: JSON}


class Note(Base):
    """One markdown file of the vault, as last read from disk."""

    __tablename__ = "notes"

    path: Mapped[str] = mapped_column(String, primary_key=True)
    folder: Mapped[str] = mapped_column(String, index=True)
    name: Mapped[str] = mapped_column(String)
    title: Mapped[str] = mapped_column(String)  # frontmatter title, else the file name
    heading: Mapped[str | None] = mapped_column(String)  # the first H1, as text
    frontmatter: Mapped[dict[str, Any]] = mapped_column(JSON)
    type: Mapped[str | None] = mapped_column(String)
    status: Mapped[str | None] = mapped_column(String)
    aliases: Mapped[list[str]] = mapped_column(JSON)
    size: Mapped[int] = mapped_column(BigInteger)
    created: Mapped[int] = mapped_column(BigInteger, index=True)
    modified: Mapped[int] = mapped_column(BigInteger, index=True)
    mtime_ns: Mapped[int] = mapped_column(BigInteger)
    content_hash: Mapped[str] = mapped_column(String)
    indexed_at: Mapped[int] = mapped_column(BigInteger)
    word_count: Mapped[int] = mapped_column(Integer)
    tasks_open: Mapped[int] = mapped_column(Integer)
    tasks_done: Mapped[int] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    # Dataview inline fields as [[key, value, line], ...] (NULL: none), shown by `get_file`;
    # those whose key the frontmatter lacks are also rows of `note_properties`.
    inline_fields: Mapped[list[Any] | None] = mapped_column(JSON)
    # The rowid of the note's full-text row, given in the order notes are written (see
    # `cache.fts`): the search filters find a match's path by it, where the FTS row would
    # load the whole body with the path; the indexer finds the row to delete by it.
    # Always written; nullable only because SQLite adds a column to a table that way.
    search_rowid: Mapped[int | None] = mapped_column(BigInteger)

    # Path second: `query_files type=` pages in path order straight off the index, no sort;
    # the search filters read a match's path off the search_rowid index alone.
    __table_args__ = (
        Index("ix_notes_type_path", "type", "path"),
        Index("ix_notes_status_path", "status", "path"),
        Index("ix_notes_search_rowid_path", "search_rowid", "path"),
        # What a base lists of each note (`cache.base_files`), read off the index alone.
        Index("ix_notes_listing", "path", "size", "created", "modified", "content_hash"),
        # Only the few notes with an error: list_problems pages through them by path.
        Index(
            "ix_notes_error_path",
            "path",
            sqlite_where=text("error IS NOT NULL"),
            postgresql_where=text("error IS NOT NULL"),
        ),
    )


class Tag(Base):
    """A tag of a note: `key` is case-folded for matching, `tag` keeps the first spelling."""

    __tablename__ = "tags"

    note_path: Mapped[str] = mapped_column(
        ForeignKey("notes.path", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String, primary_key=True)
    tag: Mapped[str] = mapped_column(String)

    # Covering: a lookup by tag reads the note paths from the index alone.
    __table_args__ = (Index("ix_tags_key_note", "key", "note_path"),)


class NoteProperty(Base):
    """One frontmatter value of a note, for `query_files where=`: a row per scalar property and
    per element of a list property. `key` is the property name case-folded; a value is in
    `text` (strings; booleans as 'true'/'false') or in `num` (numbers); both NULL for null."""

    __tablename__ = "note_properties"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    note_path: Mapped[str] = mapped_column(ForeignKey("notes.path", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String)
    text: Mapped[str | None] = mapped_column(String)
    num: Mapped[float | None] = mapped_column(Float)

    __table_args__ = (
        Index("ix_note_properties_key_text", "key", "text", "note_path"),
        Index("ix_note_properties_key_num", "key", "num", "note_path"),
        Index("ix_note_properties_note", "note_path"),
    )


class TagCounter(Base):
    """How many notes each tag covers, kept by the writer (see `weaver.cache.tag_counts`).

    A row per tag and per ancestor of one: `notes` counts the notes carrying the tag or one
    nested below it, each once; `own` those carrying exactly this tag.
    """

    __tablename__ = "tag_counts"

    key: Mapped[str] = mapped_column(String, primary_key=True)
    notes: Mapped[int] = mapped_column(Integer)
    own: Mapped[int] = mapped_column(Integer)


class Link(Base):
    """One link occurrence. `target_path` is the resolved file, or NULL while it is broken."""

    __tablename__ = "links"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    source_path: Mapped[str] = mapped_column(
        ForeignKey("notes.path", ondelete="CASCADE"), index=True
    )
    target: Mapped[str] = mapped_column(String)
    # The file name the target can match, case-folded: finds the links a new or removed file
    # could change without re-reading any note.
    target_key: Mapped[str] = mapped_column(String, index=True)
    target_path: Mapped[str | None] = mapped_column(String)
    kind: Mapped[str] = mapped_column(String)
    alias: Mapped[str | None] = mapped_column(String)
    subpath: Mapped[str | None] = mapped_column(String)
    relation: Mapped[str | None] = mapped_column(String)
    line: Mapped[int] = mapped_column(Integer)

    # Covering: backlinks of a note come from the index alone.
    __table_args__ = (Index("ix_links_target_source", "target_path", "source_path"),)


class Task(Base):
    """One task (a checkbox list item) of a note, with the Tasks plugin's fields
    (`weaver.markdown.tasks.ParsedTask`). Dates are ISO `YYYY-MM-DD` text, so that they sort and
    compare as dates; `status_type` is the status character read through the vault's Tasks
    plugin settings at write time."""

    __tablename__ = "tasks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    note_path: Mapped[str] = mapped_column(ForeignKey("notes.path", ondelete="CASCADE"))
    line: Mapped[int] = mapped_column(Integer)  # 1-based
    parent_line: Mapped[int | None] = mapped_column(Integer)
    heading: Mapped[str | None] = mapped_column(String)
    block_id: Mapped[str | None] = mapped_column(String)
    status_char: Mapped[str] = mapped_column(String)
    status_type: Mapped[str] = mapped_column(String)
    description: Mapped[str] = mapped_column(Text)
    raw: Mapped[str] = mapped_column(Text)
    tags: Mapped[list[str]] = mapped_column(JSON)
    due: Mapped[str | None] = mapped_column(String)
    scheduled: Mapped[str | None] = mapped_column(String)
    start: Mapped[str | None] = mapped_column(String)
    created: Mapped[str | None] = mapped_column(String)
    done: Mapped[str | None] = mapped_column(String)
    cancelled: Mapped[str | None] = mapped_column(String)
    recurrence: Mapped[str | None] = mapped_column(String)
    priority: Mapped[int] = mapped_column(Integer)  # index into PRIORITY_NAMES, 0 most urgent
    task_id: Mapped[str | None] = mapped_column(String)
    depends_on: Mapped[list[str]] = mapped_column(JSON)
    fields: Mapped[dict[str, Any]] = mapped_column(JSON)
    warnings: Mapped[list[str]] = mapped_column(JSON)

    __table_args__ = (
        Index("ix_tasks_note_line", "note_path", "line"),
        # "What is open and due by X", the commonest question, reads one index range.
        Index("ix_tasks_status_due", "status_type", "due"),
        # Due dates in order, with what the default order and a group by file read: open
        # tasks of a week sorted and grouped without reading a table row (migration 0021).
        Index(
            "ix_tasks_due_order",
            "due",
            "status_type",
            "priority",
            "scheduled",
            "start",
            "note_path",
            "line",
        ),
        Index("ix_tasks_scheduled", "scheduled"),
        Index("ix_tasks_done", "done"),
    )


class Attachment(Base):
    """A non-markdown file (image, PDF, ...): links and embeds can resolve to it."""

    __tablename__ = "attachments"

    path: Mapped[str] = mapped_column(String, primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    mtime_ns: Mapped[int] = mapped_column(BigInteger)


class AttachmentText(Base):
    """Where a PDF's text extraction stands (`weaver.attachments.extractor`): the size and mtime
    of the file it read (a differing `attachments` row means the file changed since: its pages
    are stale, hidden from search, and read again), the document's page count, how many pages
    were indexed, and the `problem` that kept some or all of its text out (unreadable, out of
    time or memory, more pages than are read), which list_problems shows."""

    __tablename__ = "attachment_texts"

    path: Mapped[str] = mapped_column(String, primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    mtime_ns: Mapped[int] = mapped_column(BigInteger)
    pages: Mapped[int | None] = mapped_column(Integer)  # None: the document could not be read
    indexed_pages: Mapped[int] = mapped_column(Integer)
    problem: Mapped[str | None] = mapped_column(Text)
    extracted_at: Mapped[int] = mapped_column(BigInteger)  # Unix epoch ms

    __table_args__ = (
        # Only the few files with a problem: list_problems pages through them by path.
        Index(
            "ix_attachment_texts_problem",
            "path",
            sqlite_where=text("problem IS NOT NULL"),
            postgresql_where=text("problem IS NOT NULL"),
        ),
    )


class AttachmentPage(Base):
    """One page's text of a PDF (as `markdown.cjk.segment` spells it for the index). On SQLite
    the FTS5 table `attachment_fts` indexes `text` as external content, by `id`."""

    __tablename__ = "attachment_pages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    path: Mapped[str] = mapped_column(String)
    page: Mapped[int] = mapped_column(Integer)  # from 1
    text: Mapped[str] = mapped_column(Text)

    __table_args__ = (Index("ix_attachment_pages_path_page", "path", "page", unique=True),)


class CacheState(Base):
    """Small facts about the cache itself, such as when it last changed."""

    __tablename__ = "cache_state"

    key: Mapped[str] = mapped_column(String, primary_key=True)
    value: Mapped[str] = mapped_column(String)


class NoteChange(Base):
    """A note whose row, tags or links a pass of the indexer changed, by the cache version that
    pass produced (None while the pass is under way). Readers holding something built from the
    whole cache (the graph, the name and tag indexes) update just these notes on a new version
    rather than rebuilding; see `weaver.cache.changes`."""

    __tablename__ = "note_changes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int | None] = mapped_column(BigInteger)
    path: Mapped[str] = mapped_column(String)

    __table_args__ = (Index("ix_note_changes_version", "version"),)


class VaultEventRow(Base):
    """One file event of the durable change feed (`weaver.cache.feed`), written by the pass
    that applied it, in the same transaction; `sealed` once that pass has ended."""

    __tablename__ = "vault_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String)
    path: Mapped[str] = mapped_column(String)
    old_path: Mapped[str | None] = mapped_column(String)
    initial: Mapped[bool] = mapped_column(Boolean, server_default=false())
    sealed: Mapped[bool] = mapped_column(Boolean, server_default=false())
    created: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (
        Index("ix_vault_events_sealed", "sealed"),
        {"sqlite_autoincrement": True},
    )


class EventCursor(Base):
    """How far one consumer of the change feed has read (the id of its last event)."""

    __tablename__ = "event_cursors"

    consumer: Mapped[str] = mapped_column(String, primary_key=True)
    position: Mapped[int] = mapped_column(BigInteger)
    updated: Mapped[int] = mapped_column(BigInteger)


class Execution(Base):
    """One run of a workflow, from the moment it is asked for until it ends.

    The table is also the queue: a `pending` row is claimed by whichever process has a free slot
    (the daemon for `weaver trigger --async`), and `process` (host:pid) tells a later start which
    `running` rows were left behind by a process that died. Times are Unix epoch milliseconds.
    """

    __tablename__ = "executions"

    id: Mapped[str] = mapped_column(String, primary_key=True)
    workflow_id: Mapped[str] = mapped_column(String)
    workflow_name: Mapped[str] = mapped_column(String)
    trigger_kind: Mapped[str] = mapped_column(String)  # manual | file | schedule
    trigger_detail: Mapped[dict[str, Any]] = mapped_column(JSON)
    input: Mapped[dict[str, Any]] = mapped_column(JSON)
    # pending | running | completed | failed | cancelled
    status: Mapped[str] = mapped_column(String)
    progress: Mapped[int] = mapped_column(Integer)
    message: Mapped[str | None] = mapped_column(Text)
    attempt: Mapped[int] = mapped_column(Integer)
    started: Mapped[int | None] = mapped_column(BigInteger)
    finished: Mapped[int | None] = mapped_column(BigInteger)
    duration: Mapped[int | None] = mapped_column(BigInteger)
    result: Mapped[Any | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)
    traceback: Mapped[str | None] = mapped_column(Text)
    process: Mapped[str | None] = mapped_column(String)
    created: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (
        # History, newest first, overall and per workflow; claims and running counts by status.
        Index("ix_executions_created", "created"),
        Index("ix_executions_workflow_created", "workflow_id", "created"),
        Index("ix_executions_status_workflow", "status", "workflow_id"),
    )


class WorkflowWrite(Base):
    """A note the workflow engine wrote (or deleted: empty `content_hash`), so that the file
    event it causes does not start workflows again. Kept in the cache rather than in memory so
    that a write by `weaver trigger` in a shell is recognised by the daemon watching the vault.
    """

    __tablename__ = "workflow_writes"

    path: Mapped[str] = mapped_column(String, primary_key=True)
    content_hash: Mapped[str] = mapped_column(String, primary_key=True)
    execution_id: Mapped[str | None] = mapped_column(String)
    written: Mapped[int] = mapped_column(BigInteger, index=True)


class WorkflowRecord(Base):
    """Data a workflow keeps for later: an audit log, a note's analysis, a concept's versions.

    `key` says what the record is about (usually a note path) and `kind` what sort of record it
    is ("change", "analysis", "state", ...); `data` is a JSON object. Workflows append through
    `ctx.records`; users read with `get_workflow_records` and `weaver records`.
    """

    __tablename__ = "workflow_records"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    workflow_id: Mapped[str] = mapped_column(String)
    key: Mapped[str] = mapped_column(String)
    kind: Mapped[str] = mapped_column(String)
    recorded_at: Mapped[int] = mapped_column(BigInteger)
    execution_id: Mapped[str | None] = mapped_column(String)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)

    __table_args__ = (
        # One key's timeline (and its latest record); one workflow's records over a time range.
        Index("ix_workflow_records_workflow_key_recorded", "workflow_id", "key", "recorded_at"),
        Index("ix_workflow_records_workflow_recorded", "workflow_id", "recorded_at"),
    )


class EditJournal(Base):
    """A write by Weaver to one note or many (an edit, a move and its link rewrites, a tag
    renamed across the vault), recorded before its first write so that one interrupted midway
    is finished or reported at the next start (`weaver.edits.interrupted`), and kept afterwards as
    the notes' edit history (`restore_edit`). `finished` is NULL while it runs."""

    __tablename__ = "edit_journal"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    operation: Mapped[str] = mapped_column(String)
    arguments: Mapped[dict[str, Any]] = mapped_column(JSON)
    started: Mapped[int] = mapped_column(BigInteger)
    finished: Mapped[int | None] = mapped_column(BigInteger, index=True)


class EditJournalNote(Base):
    """One note of a journalled change: its hash as read and as it will be written ("" for a
    note absent before or after), and what became of it (`pending`, then `written`, `skipped`
    when edited meanwhile, or `failed`). `old_data` is what the write replaced (undo);
    `new_data` what a change to many notes will write, until the run finishes (recovery)."""

    __tablename__ = "edit_journal_notes"

    journal_id: Mapped[int] = mapped_column(
        ForeignKey("edit_journal.id", ondelete="CASCADE"), primary_key=True
    )
    path: Mapped[str] = mapped_column(String, primary_key=True)
    old_hash: Mapped[str] = mapped_column(String)
    new_hash: Mapped[str] = mapped_column(String)
    status: Mapped[str] = mapped_column(String)
    detail: Mapped[str | None] = mapped_column(Text)
    old_data: Mapped[bytes | None] = mapped_column(LargeBinary)
    old_size: Mapped[int | None] = mapped_column(BigInteger)  # len(old_data), for the size cap
    new_data: Mapped[bytes | None] = mapped_column(LargeBinary)
    written_at: Mapped[int | None] = mapped_column(BigInteger)

    __table_args__ = (
        Index("ix_edit_journal_notes_path", "path"),
        Index("ix_edit_journal_notes_old_size", "old_size"),
    )


class AuditEntry(Base):
    """Who made one note's write by Weaver: one row per note of an edit-journal run (`edit_id`),
    inserted with the run (`outcome` "pending") and settled with it ("written", "skipped",
    "failed"), so a row never claims a write that did not land (`weaver.cache.audit_log`)."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[int] = mapped_column(BigInteger)
    caller_kind: Mapped[str] = mapped_column(String)
    client_id: Mapped[str] = mapped_column(String)
    client_name: Mapped[str] = mapped_column(String)
    tool: Mapped[str] = mapped_column(String)
    path: Mapped[str] = mapped_column(String)
    edit_id: Mapped[int] = mapped_column(Integer)
    outcome: Mapped[str] = mapped_column(String)
    detail: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        # The whole log by time (and its pruning); one client's writes (by its id or its
        # name: `client` matches either); one note's writes.
        Index("ix_audit_log_at", "at"),
        Index("ix_audit_log_client_at", "client_id", "at"),
        Index("ix_audit_log_client_name_at", "client_name", "at"),
        Index("ix_audit_log_path_at", "path", "at"),
        Index("ix_audit_log_edit_id", "edit_id"),
    )


class NoteEmbedding(Base):
    """Which version of a note its chunks' vectors were made from, and by which model: a
    note is up to date when both match (see `weaver.cache.vectors`). No foreign key to
    `notes`: a move re-keys the row instead of losing the vectors with the old path."""

    __tablename__ = "note_embeddings"

    note_path: Mapped[str] = mapped_column(String, primary_key=True)
    content_hash: Mapped[str] = mapped_column(String)
    model: Mapped[str] = mapped_column(String)
    chunk_count: Mapped[int] = mapped_column(Integer)
    embedded_at: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (Index("ix_note_embeddings_content_hash", "content_hash"),)


class NoteChunk(Base):
    """One embedded chunk of a note: its heading path, its text (for snippets) and its vector
    (float32, little-endian, unit length: the layout sqlite-vec reads too)."""

    __tablename__ = "note_chunks"

    note_path: Mapped[str] = mapped_column(String, primary_key=True)
    chunk_no: Mapped[int] = mapped_column(Integer, primary_key=True)
    heading: Mapped[str] = mapped_column(String)
    body: Mapped[str] = mapped_column(Text)
    vector: Mapped[bytes] = mapped_column(LargeBinary)


class AttachmentEmbedding(Base):
    """Which extraction of a PDF's text (`AttachmentText.extracted_at`) its chunks' vectors
    were made from, and by which model: the vectors answer only while both match and the text
    is fresh (see `weaver.cache.attachment_vectors`)."""

    __tablename__ = "attachment_embeddings"

    path: Mapped[str] = mapped_column(String, primary_key=True)
    extracted_at: Mapped[int] = mapped_column(BigInteger)
    model: Mapped[str] = mapped_column(String)
    chunk_count: Mapped[int] = mapped_column(Integer)
    embedded_at: Mapped[int] = mapped_column(BigInteger)


class AttachmentChunk(Base):
    """One embedded chunk of a PDF page: the page it is on (from 1), its text (for snippets)
    and its vector (float32, little-endian, unit length, as `NoteChunk`)."""

    __tablename__ = "attachment_chunks"

    path: Mapped[str] = mapped_column(String, primary_key=True)
    chunk_no: Mapped[int] = mapped_column(Integer, primary_key=True)
    page: Mapped[int] = mapped_column(Integer)
    body: Mapped[str] = mapped_column(Text)
    vector: Mapped[bytes] = mapped_column(LargeBinary)


class OAuthClient(Base):
    """A client registered with Weaver's authorization server (RFC 7591): `info` is its
    registration as the MCP SDK models it (`OAuthClientInformationFull`), `name` what the
    consent page and the clients page show."""

    __tablename__ = "oauth_clients"

    client_id: Mapped[str] = mapped_column(String, primary_key=True)
    name: Mapped[str] = mapped_column(String)
    info: Mapped[dict[str, Any]] = mapped_column(JSON)
    registered_at: Mapped[int] = mapped_column(BigInteger)


class OAuthToken(Base):
    """An authorization code, access token or refresh token (`kind`), kept only as the SHA-256
    of its value. The code of one consent and every token issued from it share `grant_id`, so
    revoking one revokes them all. `expires_at` is Unix seconds, as OAuth counts; `data` holds
    what a code must remember of its request (PKCE challenge, redirect URI)."""

    __tablename__ = "oauth_tokens"

    token_hash: Mapped[str] = mapped_column(String, primary_key=True)
    kind: Mapped[str] = mapped_column(String)
    client_id: Mapped[str] = mapped_column(
        ForeignKey("oauth_clients.client_id", ondelete="CASCADE"), index=True
    )
    grant_id: Mapped[str] = mapped_column(String, index=True)
    scopes: Mapped[str] = mapped_column(String)
    resource: Mapped[str | None] = mapped_column(String)
    expires_at: Mapped[int] = mapped_column(BigInteger)
    issued_at: Mapped[int] = mapped_column(BigInteger)
    data: Mapped[dict[str, Any] | None] = mapped_column(JSON)
