"""The PostgreSQL part of the cache's full-text search: `tsvector`, GIN, `ts_rank_cd`.

`note_texts` (migration `0017`) holds each note's frontmatter block and body as read, and a
weighted `tsvector` of its title (A), other names (B), headings (C) and body (D) in the
`weaver_search` configuration (English stemming, accents folded). `ts_rank_cd` reads the
weights as `RANK_WEIGHTS`, the same 10 : 8 : 3 : 1 as FTS5's column weights in `cache.fts`,
so a note named for the query outranks notes that only mention it.

`cache.fts` stays the one entry point: its functions hand over to these on PostgreSQL, with
the same arguments. A query arrives as the FTS5 expression `fts_query` made of the user's text
(every term quoted, OR groups in parentheses, `NOT`, `*` for a prefix), and `to_tsquery_text`
spells that tree out for `to_tsquery`, every term quoted again: no input reaches tsquery's own
syntax or raises. (`websearch_to_tsquery` has neither prefixes nor grouping, so it could not
keep `search_notes`' query language.) CJK runs are indexed a character a token, as on SQLite.

Bounds: a body is indexed up to `INDEX_MAX_CHARS` (a `tsvector` holds at most 1 MiB), and a
snippet (`ts_headline`, whose time grows with the text it reads) looks at the first
`HEADLINE_MAX_CHARS` of the body only.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    ColumnClause,
    Connection,
    Select,
    String,
    Text,
    bindparam,
    case,
    column,
    exists,
    func,
    literal,
    literal_column,
    select,
    table,
)
from sqlalchemy.dialects import postgresql

from weaver.cache.models import Tag
from weaver.cache.read import tag_condition

if TYPE_CHECKING:
    from weaver.index.workers import NoteRecord

TEXT_TABLE = "note_texts"
CONFIG = "weaver_search"
# ts_rank_cd's weights for D, C, B, A: body, headings, other names, title.
RANK_WEIGHTS = "{0.1, 0.3, 0.8, 1.0}"
INDEX_MAX_CHARS = 256 * 1024
HEADLINE_MAX_CHARS = 64 * 1024
_CHUNK = 900

note_texts = table(
    TEXT_TABLE,
    column("note_path", String),
    column("front", Text),
    column("body", Text),
    column("document", postgresql.TSVECTOR),
)


def supported(conn: Connection) -> bool:
    return conn.dialect.name == "postgresql"


# ---------------------------------------------------------------- writes


# Constants written into the statements: the configuration, and each weight's letter (a
# "char", which a bound text parameter is not).
_CONFIG_SQL: ColumnClause[Any] = literal_column(f"'{CONFIG}'::regconfig")


def _weighted(text_param: str, weight: str, limit: int | None = None) -> Any:
    value: Any = bindparam(text_param, type_=Text)
    if limit is not None:
        value = func.left(value, literal_column(str(limit)))
    letter: ColumnClause[Any] = literal_column(f"'{weight}'::\"char\"")
    return func.setweight(func.to_tsvector(_CONFIG_SQL, value), letter)


@functools.cache
def _upsert() -> Any:
    document = (
        _weighted("title", "A")
        .op("||")(_weighted("names", "B"))
        .op("||")(_weighted("headings", "C"))
        .op("||")(_weighted("search_body", "D", INDEX_MAX_CHARS))
    )
    statement = postgresql.insert(note_texts).values(
        note_path=bindparam("path"),
        front=bindparam("front"),
        body=bindparam("body"),
        document=document,
    )
    # As FTS5's OR REPLACE: a row left behind by a note that is gone never fails a pass.
    excluded = statement.excluded
    return statement.on_conflict_do_update(
        index_elements=["note_path"],
        set_={"front": excluded.front, "body": excluded.body, "document": excluded.document},
    )


# Anything but letters and digits: FTS5's unicode61 splits words there. PostgreSQL's parser
# would keep `#project/alpha` or `a.b@c.d` whole (a file path, an email), so `project` would
# not find them; spaces in their place give it the words FTS5 sees.
_NON_WORD = re.compile(r"[\W_]+")


def words_only(text: str) -> str:
    return _NON_WORD.sub(" ", text)


def insert_texts(
    conn: Connection, records: Sequence[NoteRecord], names: Sequence[str], segment: Any
) -> None:
    """Store these notes' texts and search documents (`names`: each note's other names;
    `segment`: CJK characters made tokens of their own). One statement, many rows."""
    rows = [
        {
            "path": r.path,
            "front": r.front,
            "body": r.body,
            "title": words_only(segment(r.title)),
            "names": words_only(segment(name)),
            "headings": words_only(segment(r.headings)),
            "search_body": words_only(segment(r.body)),
        }
        for r, name in zip(records, names, strict=True)
    ]
    conn.execute(_upsert(), rows)


def delete_texts(conn: Connection, paths: Collection[str]) -> None:
    paths = list(paths)
    for start in range(0, len(paths), _CHUNK):
        batch = paths[start : start + _CHUNK]
        conn.execute(note_texts.delete().where(note_texts.c.note_path.in_(batch)))


def note_bodies(conn: Connection, paths: Sequence[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for start in range(0, len(paths), _CHUNK):
        batch = paths[start : start + _CHUNK]
        rows = conn.execute(
            select(note_texts.c.note_path, note_texts.c.body).where(
                note_texts.c.note_path.in_(batch)
            )
        )
        found.update((path, body) for path, body in rows)
    return found


def get_note_text(conn: Connection, path: str) -> str | None:
    """The note's text as it was read (frontmatter block and body), or None if not stored."""
    row = conn.execute(
        select(note_texts.c.front, note_texts.c.body).where(note_texts.c.note_path == path)
    ).first()
    return None if row is None else row.front + row.body


# ---------------------------------------------------------------- FTS5 expression -> tsquery

# What `fts_query` writes: "quoted terms" (quotes doubled inside, maybe a * after), OR, AND,
# NOT and parentheses.
_EXPRESSION_TOKEN = re.compile(r'"((?:[^"]|"")*)"(\*?)|(\()|(\))|(OR|AND|NOT)')


def to_tsquery_text(expression: str) -> str:
    """The FTS5 expression of `fts_query` as `to_tsquery` input: each term single-quoted
    (quotes doubled, backslashes escaped), `*` -> `:*`, juxtaposition and AND -> `&`, OR ->
    `|`, NOT -> `& !`. A quoted run of words is a phrase in both."""
    parts: list[str] = []
    for match in _EXPRESSION_TOKEN.finditer(expression):
        term, star, opening, closing, operator = match.groups()
        if term is not None:
            if parts and parts[-1] not in ("(", "|", "&", "& !"):
                parts.append("&")
            words = words_only(term.replace('""', '"')).strip()
            parts.append(f"'{words}'" + (":*" if star else ""))
        elif opening:
            if parts and parts[-1] not in ("(", "|", "&", "& !"):
                parts.append("&")
            parts.append("(")
        elif closing:
            parts.append(")")
        elif operator == "OR":
            parts.append("|")
        elif operator == "AND":
            parts.append("&")
        else:
            parts.append("& !")
    return " ".join(parts)


# ---------------------------------------------------------------- queries

_HEADLINE_OPTIONS = (
    "StartSel=<mark>, StopSel=</mark>, MaxWords={tokens}, MinWords={low}, "
    "MaxFragments=1, FragmentDelimiter=…, HighlightAll=false"
)


def search(
    conn: Connection,
    expression: str,
    limit: int,
    offset: int,
    *,
    directory: str | None,
    tag: str | None,
    pinned: Sequence[str],
    snippet_tokens: int,
    segment_pattern: str,
) -> tuple[list[tuple[str, str, float]], int]:
    """(path, snippet, score) of the page's matches, best first, and how many match in all.
    Scores are negated ranks, as FTS5's bm25() (lower is better); pinned notes get
    `PIN_SCORE` added, as in `cache.fts`."""
    statements = _search_statements(bool(directory), tag is not None)
    values = _values(expression, limit, offset, directory, tag, pinned)
    values |= {
        "options": _HEADLINE_OPTIONS.format(tokens=snippet_tokens, low=snippet_tokens // 2),
        "cjk": segment_pattern,
    }
    page = [(p, s, float(r)) for p, s, r in conn.execute(statements.page, values)]
    if len(page) < limit and (page or offset == 0):
        total = offset + len(page)
    else:
        total = conn.execute(statements.count, values).scalar_one()
    return page, total


def ranked_paths(
    conn: Connection, expression: str, depth: int, *, directory: str | None, tag: str | None
) -> list[str]:
    """The paths of the `depth` best matches, ranked as `search` ranks them, without its
    headlines and count (what hybrid search fuses)."""
    statements = _search_statements(bool(directory), tag is not None)
    values = _values(expression, depth, 0, directory, tag, ())
    return list(conn.execute(statements.paths, values).scalars())


def _values(
    expression: str,
    limit: int,
    offset: int,
    directory: str | None,
    tag: str | None,
    pinned: Sequence[str],
) -> dict[str, Any]:
    from weaver.cache.fts import PIN_SCORE

    values: dict[str, Any] = {
        "query": to_tsquery_text(expression),
        "limit": limit,
        "offset": offset,
        "pinned": list(pinned) or [""],
        "pin": PIN_SCORE,
    }
    if directory:
        values |= {"folder_low": directory + "/", "folder_high": directory + "0"}
    if tag is not None:
        values["tag"] = tag
    return values


class _Statements:
    def __init__(self, page: Select[Any], count: Select[Any], paths: Select[Any]) -> None:
        self.page = page
        self.count = count
        self.paths = paths


@functools.cache
def _search_statements(by_directory: bool, by_tag: bool) -> _Statements:
    query = func.to_tsquery(_CONFIG_SQL, bindparam("query", type_=Text))
    # MATERIALIZED: the planner cannot see the tsquery, so it finds the matches through the
    # GIN index. Inlined (as PostgreSQL inlines a CTE used once, the count's), a word in half
    # the notes looked to it like a case for a sequential scan, which reads every note's
    # `tsvector` out of its TOAST table, where the index needs no document at all: counting
    # 4,532 matches of 10,000 took 31-47 ms so, 2 ms through the index.
    query_cte = select(query.label("q")).cte("query").prefix_with("MATERIALIZED")
    t = note_texts.alias("t")
    matches: list[Any] = [t.c.document.op("@@")(query_cte.c.q)]
    if by_directory:
        low, high = bindparam("folder_low", type_=String), bindparam("folder_high", type_=String)
        matches += [t.c.note_path >= low, t.c.note_path < high]
    if by_tag:
        key = bindparam("tag", type_=String)
        matches.append(
            exists(select(Tag.key).where(Tag.note_path == t.c.note_path, tag_condition(key)))
        )
    rank = func.ts_rank_cd(
        literal(RANK_WEIGHTS).cast(postgresql.ARRAY(postgresql.REAL)), t.c.document, query_cte.c.q
    )
    pin = case(
        (t.c.note_path.in_(bindparam("pinned", expanding=True)), bindparam("pin")), else_=0.0
    )
    score = (-rank + pin).label("score")
    ranked = (
        select(t.c.note_path.label("path"), score)
        .select_from(t)
        .join(query_cte, literal(True))
        .where(*matches)
        .order_by(score, t.c.note_path)
        .limit(bindparam("limit"))
        .offset(bindparam("offset"))
        .cte("ranked")
    )
    body = note_texts.alias("b")
    head = func.left(body.c.body, HEADLINE_MAX_CHARS)
    segmented = func.regexp_replace(head, bindparam("cjk", type_=Text), "\u200b\\1\u200b", "g")
    headline = func.ts_headline(
        _CONFIG_SQL,
        segmented,
        query_cte.c.q,
        bindparam("options", type_=Text),
    )
    page = (
        select(ranked.c.path, headline, ranked.c.score)
        .select_from(ranked)
        .join(body, body.c.note_path == ranked.c.path)
        .join(query_cte, literal(True))
        .order_by(ranked.c.score, ranked.c.path)
    )
    count = select(func.count()).select_from(t).join(query_cte, literal(True)).where(*matches)
    paths = select(ranked.c.path).order_by(ranked.c.score, ranked.c.path)
    return _Statements(page, count, paths)
