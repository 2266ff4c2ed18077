"""Reads of the vault's attachments (the files other than notes that links can resolve to):
a page of them by kind, folder and use, each with how many notes link to it. Set-based: one
count, one page, one grouped count of the page's linking notes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, Connection, exists, func, not_, or_, select

from weaver.attachments.kinds import EXTENSIONS, AttachmentKind
from weaver.cache.models import Attachment, Link
from weaver.cache.read import under_prefix
from weaver.paging import Page


@dataclass(frozen=True, slots=True)
class AttachmentEntry:
    path: str
    size: int
    mtime_ns: int
    linked_from: int  # notes holding a link or embed resolving to it


@dataclass(frozen=True, slots=True)
class AttachmentFilters:
    kind: AttachmentKind | None = None
    folder: str | None = None  # at or below it
    unused: bool | None = None  # True: no note links to it; False: some note does


def list_attachments(
    conn: Connection, filters: AttachmentFilters, limit: int, offset: int
) -> Page[AttachmentEntry]:
    """The attachments matching `filters`, by path, a page at a time."""
    where = _conditions(filters)
    total = conn.execute(select(func.count()).select_from(Attachment).where(*where)).scalar_one()
    rows = conn.execute(
        select(Attachment.path, Attachment.size, Attachment.mtime_ns)
        .where(*where)
        .order_by(Attachment.path)
        .limit(limit)
        .offset(offset)
    ).all()
    counts = linking_notes(conn, [row.path for row in rows])
    entries = [AttachmentEntry(r.path, r.size, r.mtime_ns, counts.get(r.path, 0)) for r in rows]
    return Page(entries, total, offset, limit)


def linking_notes(conn: Connection, paths: Sequence[str]) -> dict[str, int]:
    """For each of `paths`, the notes linking to it (those linked from none are left out)."""
    if not paths:
        return {}
    rows = conn.execute(
        select(Link.target_path, func.count(func.distinct(Link.source_path)))
        .where(Link.target_path.in_(paths))
        .group_by(Link.target_path)
    ).all()
    return {str(target): count for target, count in rows}


def _conditions(filters: AttachmentFilters) -> list[ColumnElement[bool]]:
    where: list[ColumnElement[bool]] = []
    if filters.kind is not None:
        where.append(_of_kind(filters.kind))
    if filters.folder:
        # An attachment's path is below its folder: `folder/` and after, never `folder` itself.
        where.append(under_prefix(Attachment.path, filters.folder))
    if filters.unused is not None:
        linked = exists().where(Link.target_path == Attachment.path)
        where.append(not_(linked) if filters.unused else linked)
    return where


def _of_kind(kind: AttachmentKind) -> ColumnElement[bool]:
    lowered = func.lower(Attachment.path)
    if kind != "other":
        return or_(*(lowered.like(f"%.{ext}") for ext in EXTENSIONS[kind]))
    known = [ext for exts in EXTENSIONS.values() for ext in exts]
    return not_(or_(*(lowered.like(f"%.{ext}") for ext in known)))
