"""Where one note's links lead, by each link's target as written: what the dashboard renders a
note's `[[links]]`, embeds and properties with, so a link on the page goes where the index
resolved it (the indexer's resolution, kept current as notes come and go), never resolved again
by other rules.

Keyed by the target text alone: the resolver decides from that text and the linking note's
folder, so every link of one note with the same target leads to the same file.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, func, select

from weaver.cache.models import Link, Note


@dataclass(frozen=True, slots=True)
class LinkEnd:
    path: str | None  # the file the target resolves to; None while the link is broken
    note: bool  # that file is a note (else an attachment: an image, a PDF)


def link_ends_of(conn: Connection, source: str) -> dict[str, LinkEnd]:
    """Each distinct target the note at `source` links to (as written), and where it leads."""
    resolved = func.max(Link.target_path)
    rows = conn.execute(
        select(Link.target, resolved, func.max(Note.path))
        .outerjoin(Note, Note.path == Link.target_path)
        .where(Link.source_path == source)
        .group_by(Link.target)
    )
    return {target: LinkEnd(path, note is not None) for target, path, note in rows}
