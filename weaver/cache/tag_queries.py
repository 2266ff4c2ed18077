"""The tag queries behind vault-wide tag edits (`weaver.edits.tags`): every tag with its counts,
and the notes a rename must read."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, ColumnElement, Connection, String, func, literal_column, select, union

from weaver.cache.dialect import is_postgres
from weaver.cache.models import Note, Tag, TagCounter
from weaver.cache.read import like_folded, tag_condition


def list_tag_counts(conn: Connection) -> list[tuple[str, int, int]]:
    """(tag as spelled in a note, notes carrying it or one below, notes carrying exactly it),
    by tag key; one query."""
    spelling = select(Tag.key, func.min(Tag.tag).label("tag")).group_by(Tag.key).subquery()
    rows = conn.execute(
        select(TagCounter.key, spelling.c.tag, TagCounter.notes, TagCounter.own)
        .join(spelling, spelling.c.key == TagCounter.key, isouter=True)
        .order_by(TagCounter.key)
    ).all()
    return [(tag or key, notes, own) for key, tag, notes, own in rows]


def _string_tags(conn: Connection) -> tuple[ColumnElement[Any], ColumnElement[bool]]:
    """The frontmatter's `tags` value as text, and whether it is one JSON string."""
    if is_postgres(conn):
        key: ColumnElement[str] = literal_column("'tags'")
        tags = Note.frontmatter.op("->", return_type=JSON)(key)
        as_text = Note.frontmatter.op("->>", return_type=String)(key)
        return as_text, func.json_typeof(tags) == "string"
    tags_value = func.json_extract(Note.frontmatter, "$.tags")
    return tags_value, func.json_type(Note.frontmatter, "$.tags") == "text"


def retag_candidates(conn: Connection, key: str) -> list[str]:
    """Notes carrying tag `key` (case-folded) or one nested below it, and notes whose
    frontmatter `tags` is one string that may name it (the comma form the index cannot read:
    filtered with LIKE, which folds ASCII case only, so a non-ASCII tag takes all of them)."""
    tagged = select(Tag.note_path).where(tag_condition(key))
    tags_value, is_string = _string_tags(conn)
    string_form = select(Note.path).where(is_string)
    if key.isascii():
        escaped = key.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        string_form = string_form.where(like_folded(conn, tags_value, f"%{escaped}%"))
    return sorted(conn.execute(union(tagged, string_form)).scalars())
