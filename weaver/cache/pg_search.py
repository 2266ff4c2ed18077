"""The PostgreSQL part of the cache's full-text search: `tsvector`, GIN, `ts_rank_cd`.

`note_texts` (migration `0017`) holds each note's frontmatter block and body as read, and a
weighted `tsvector` of its title (A), other names (B), headings (C) and body (D) in the
`weaver_search` configuration (English stemming, accents folded), ranked with `RANK_WEIGHTS`,
the column weights of FTS5 in `cache.fts`. Only the best `RANK_CANDIDATES` matches are ranked in
full; the matches past them follow in the order they were chosen (`_search_statements`). CJK
runs are indexed a character a token, as on SQLite.

`cache.fts` stays the one entry point: its functions hand over to these, with the same
arguments. `to_tsquery_text` spells `fts_query`'s expression out for `to_tsquery`, every term
quoted again: no input reaches tsquery's own syntax or raises. A body is indexed up to
`INDEX_MAX_CHARS` (a `tsvector` holds at most 1 MiB); a page hands back the first
`SNIPPET_READ_CHARS` of each hit's body, and `cache.fts` makes the snippet (`bounded_snippet`).
Why: docs/architecture.md, "cache/pg_search.py".

It stays whole at ~505 lines: its statements, their values and the tsquery spelling serve the
one search it implements.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
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
    from weaver.cache.rows import NoteRecord

TEXT_TABLE = "note_texts"
CONFIG = "weaver_search"
# ts_rank_cd's weights for D, C, B, A: body, headings, other names, title.
RANK_WEIGHTS = "{0.1, 0.3, 0.8, 1.0}"
INDEX_MAX_CHARS = 256 * 1024
SNIPPET_READ_CHARS = 64 * 1024
# How many matches `ts_rank_cd` ranks over their whole documents, and how much of a body
# the `lead` they are chosen by holds (see `_search_statements`). Measured at 10,000 notes
# (docs/postgres.md): more of either finds the full ranking's top 5 more often, and costs
# more; a bigger lead also makes every row wider.
RANK_CANDIDATES = 200
LEAD_CHARS = 512
_CHUNK = 900

note_texts = table(
    TEXT_TABLE,
    column("note_path", String),
    column("front", Text),
    column("body", Text),
    column("head", postgresql.TSVECTOR),
    column("lead", postgresql.TSVECTOR),
    column("document", postgresql.TSVECTOR),
    column("ctid"),  # the row's address (a system column)
)

# Added to a pinned note's rank (FTS5's bm25() and `ts_rank_cd` turned negative alike: lower
# ranks first), so a note named exactly as searched leads the page; its score is reported
# without it. `cache.fts` pins with it too.
PIN_SCORE = -1e9


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
    head = (
        _weighted("title", "A")
        .op("||")(_weighted("names", "B"))
        .op("||")(_weighted("headings", "C"))
    )
    document = head.op("||")(_weighted("search_body", "D", INDEX_MAX_CHARS))
    lead = head.op("||")(_weighted("search_body", "D", LEAD_CHARS))
    statement = postgresql.insert(note_texts).values(
        note_path=bindparam("path"),
        front=bindparam("front"),
        body=bindparam("body"),
        head=head,
        lead=lead,
        document=document,
    )
    # As FTS5's OR REPLACE: a row left behind by a note that is gone never fails a pass.
    excluded = statement.excluded
    return statement.on_conflict_do_update(
        index_elements=["note_path"],
        set_={
            "front": excluded.front,
            "body": excluded.body,
            "head": excluded.head,
            "lead": excluded.lead,
            "document": excluded.document,
        },
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
            "search_body": words_only(segment(r.body) if r.search_body is None else r.search_body),
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
            parts.append(_tsquery_term(term, star))
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


def any_term_text(expression: str) -> str:
    """`to_tsquery` input matching a text that holds any of the expression's wanted terms
    (those before its NOT: `fts_query` puts every excluded term after one NOT), so that a
    title holding one word of two still counts towards choosing candidates."""
    terms: list[str] = []
    for match in _EXPRESSION_TOKEN.finditer(expression):
        term, star, _, _, operator = match.groups()
        if operator == "NOT":
            break
        if term is not None:
            terms.append(_tsquery_term(term, star))
    return " | ".join(terms) if terms else to_tsquery_text(expression)


def _tsquery_term(term: str, star: str) -> str:
    words = words_only(term.replace('""', '"')).strip()
    return f"'{words}'" + (":*" if star else "")


# ---------------------------------------------------------------- queries


def search(
    conn: Connection,
    expression: str,
    limit: int,
    offset: int,
    *,
    directory: str | None,
    tag: str | None,
    pinned: Sequence[str],
) -> tuple[list[tuple[str, str, float]], int]:
    """(path, body, score) of the page's matches, best first (each body's first
    `SNIPPET_READ_CHARS`, for its snippet), and how many match in all. Scores are negated
    ranks, as FTS5's bm25() (lower is better); pinned notes get `PIN_SCORE` added, as in
    `cache.fts`."""
    values = _values(expression, limit, offset, directory, tag, pinned)
    statements = _search_statements(bool(directory), tag is not None, _has_phrase(values))
    with index_scans(conn):
        rows = _page_rows(conn, statements, statements.page, statements.tail_page, values)
        page = [(path, body, float(score)) for path, body, score, _ in rows]
        counted = next((total for *_, total in rows if total is not None), None)
        if counted is not None:  # counted by the candidates' window, in the same pass
            total = counted
        elif len(page) < limit and (page or offset == 0):  # the page holds the last match
            total = offset + len(page)
        else:
            total = conn.execute(statements.count, values).scalar_one()
    return page, total


def ranked_paths(
    conn: Connection, expression: str, depth: int, *, directory: str | None, tag: str | None
) -> list[str]:
    """The paths of the `depth` best matches, ranked as `search` ranks them, without its
    bodies and count (what hybrid search fuses)."""
    values = _values(expression, depth, 0, directory, tag, ())
    statements = _search_statements(bool(directory), tag is not None, False)
    with index_scans(conn):
        rows = _page_rows(conn, statements, statements.paths, statements.tail_paths, values)
    return [row[0] for row in rows]


def count_matches(
    conn: Connection, expression: str, *, directory: str | None, tag: str | None
) -> int:
    """How many notes match, as `search` counts them."""
    values = _values(expression, 0, 0, directory, tag, ())
    statements = _search_statements(bool(directory), tag is not None, False)
    with index_scans(conn):
        return int(conn.execute(statements.count, values).scalar_one())


@contextlib.contextmanager
def index_scans(conn: Connection) -> Iterator[None]:
    """No sequential scan of `note_texts` (or of the PDFs' vectors, `pg_attachment_search`)
    for these statements (the setting as it was after them, for the rest of the
    transaction). The planner does not count reading a document out of TOAST: to it, the
    narrow rows of a few thousand notes look cheaper to scan than the GIN index, and such a
    scan reads every note's document.

    Put back only when the statements succeeded: after a failed one (a deadline's
    `statement_timeout`, say) the transaction is aborted, and setting it back would fail too,
    hiding the error that counts; the rollback ends the local setting anyway."""
    previous = conn.execute(_SEQSCAN_OFF).scalar_one()
    yield
    conn.execute(_SEQSCAN_SET, {"value": previous})


# One round trip each: the setting before, and set (transaction-local, as SET LOCAL).
_SEQSCAN_OFF = select(
    func.current_setting("enable_seqscan"), func.set_config("enable_seqscan", "off", True)
)
_SEQSCAN_SET = select(func.set_config("enable_seqscan", bindparam("value", type_=Text), True))


def _page_rows(
    conn: Connection,
    statements: _Statements,
    ranked: Select[Any],
    tail: Select[Any],
    values: dict[str, Any],
) -> list[Any]:
    """The page's rows: from the ranked candidates while it is among them, then from the
    tail (the matches past them, in the order they were chosen by)."""
    rows: list[Any] = []
    if values["offset"] < RANK_CANDIDATES:
        rows += conn.execute(ranked, values).all()
    if values["tail_limit"] > 0:
        rows += conn.execute(tail, values).all()
    return rows


def _has_phrase(values: dict[str, Any]) -> bool:
    """Whether the query holds a phrase (a quoted run of words, or of CJK characters), which
    the GIN index cannot check: each match it finds is checked against its document."""
    # A term of several words is a phrase in to_tsquery's input: `'summary create'`.
    return any(" " in term for term in _QUOTED_TERM.findall(values["query"]))


_QUOTED_TERM = re.compile(r"'([^']*)'")


def _values(
    expression: str,
    limit: int,
    offset: int,
    directory: str | None,
    tag: str | None,
    pinned: Sequence[str],
) -> dict[str, Any]:
    tail_offset = max(RANK_CANDIDATES, offset)
    values: dict[str, Any] = {
        "query": to_tsquery_text(expression),
        "any": any_term_text(expression),
        "depth": RANK_CANDIDATES,
        "limit": limit,
        "offset": offset,
        "tail_offset": tail_offset,
        "tail_limit": max(0, offset + limit - tail_offset),
        "pinned": list(pinned) or [""],
        "pin": PIN_SCORE,
    }
    return values | filter_values(directory, tag)


def filter_values(directory: str | None, tag: str | None) -> dict[str, str]:
    """The bound values of a search's folder and tag filters, on both backends: a folder is
    the paths from `folder/` up to `folder0` (`0` sorts just after `/`, as in
    `read.under_prefix`); "" is the vault's root, no filter."""
    values: dict[str, str] = {}
    if directory:
        values |= {"folder_low": directory + "/", "folder_high": directory + "0"}
    if tag is not None:
        values["tag"] = tag
    return values


@dataclass(frozen=True, slots=True)
class _Statements:
    page: Select[Any]  # the ranked candidates' part of a page, with bodies
    tail_page: Select[Any]  # the part past the candidates
    count: Select[Any]
    paths: Select[Any]  # `page` and `tail_page` without bodies, for `ranked_paths`
    tail_paths: Select[Any]


def _weights() -> Any:
    return literal(RANK_WEIGHTS).cast(postgresql.ARRAY(postgresql.REAL))


@functools.cache
def _search_statements(by_directory: bool, by_tag: bool, counted: bool) -> _Statements:
    """The statements for this combination of filters; `counted`: the candidates count every
    match with a window (a phrase's matches: the count statement would check each again).

    The GIN index finds the matches. The best `RANK_CANDIDATES` of them by what their narrow
    rows hold (`choosing`: pinned first, then `ts_rank_cd` over the `lead`, then `ts_rank` of
    the small `head` against any wanted term, so a title holding one word of two still
    counts, then the path) are ranked by `ts_rank_cd` over their whole documents, and only
    their documents are read. Past the candidates a page goes on in the choosing order (the
    same function over each body's start), so pages neither overlap nor skip."""
    query = func.to_tsquery(_CONFIG_SQL, bindparam("query", type_=Text))
    any_term = func.to_tsquery(_CONFIG_SQL, bindparam("any", type_=Text))
    # MATERIALIZED: the planner cannot see the tsquery, so it finds the matches through the
    # GIN index. Inlined (as PostgreSQL inlines a CTE used once, the count's), a word in half
    # the notes looked to it like a case for a sequential scan, which reads every note's
    # `tsvector` out of its TOAST table, where the index needs no document at all.
    query_cte = (
        select(query.label("q"), any_term.label("any")).cte("query").prefix_with("MATERIALIZED")
    )
    t = note_texts.alias("t")
    matches = _matches(t, query_cte.c.q, by_directory, by_tag)
    pinned: Any = bindparam("pinned", expanding=True)
    # `lead` and `head` are in the row: choosing reads no document. `ts_rank_cd` over a few
    # thousand matches is most of a search's time, and is 0 where the lead lacks the query,
    # which `@@` checks for far less (docs/benchmarks-notes.md).
    cheap_rank = case(
        (
            t.c.lead.op("@@")(query_cte.c.q),
            func.ts_rank_cd(_weights(), t.c.lead, query_cte.c.q),
        ),
        else_=0.0,
    )
    choosing = (
        case((t.c.note_path.in_(pinned), 0), else_=1),
        cheap_rank.desc(),
        func.ts_rank(_weights(), t.c.head, query_cte.c.any).desc(),
        t.c.note_path,
    )
    matched = (
        select(t.c.note_path.label("path"))
        .select_from(t)
        .join(query_cte, literal(True))
        .where(*matches)
    )
    total = func.count().over() if counted else literal_column("NULL::bigint")
    # Each match's row address, not its document, goes through the sort: the candidates'
    # documents are read by address (a TID scan), and no other.
    candidates = (
        matched.add_columns(t.c.ctid, total.label("total"))
        .order_by(*choosing)
        .limit(bindparam("depth"))
        .subquery("candidates")
    )
    d = note_texts.alias("d")
    rank = func.ts_rank_cd(_weights(), d.c.document, query_cte.c.q)
    pin = case((candidates.c.path.in_(pinned), bindparam("pin")), else_=0.0)
    score = (-rank + pin).label("score")
    ranked = (
        select(candidates.c.path, score, candidates.c.total)
        .select_from(candidates)
        .join(d, d.c.ctid == candidates.c.ctid)
        .join(query_cte, literal(True))
        .order_by(score, candidates.c.path)
        .limit(bindparam("limit"))
        .offset(bindparam("offset"))
        .subquery("ranked")
    )
    tail = (
        matched.add_columns(func.row_number().over(order_by=choosing).label("position"))
        .order_by(*choosing)
        .limit(bindparam("tail_limit"))
        .offset(bindparam("tail_offset"))
        .subquery("tail")
    )
    # The count's own CTE: it needs no `any`.
    count_cte = select(query.label("q")).cte("query").prefix_with("MATERIALIZED")
    count = (
        select(func.count())
        .select_from(t)
        .join(count_cte, literal(True))
        .where(*_matches(t, count_cte.c.q, by_directory, by_tag))
    )
    return _Statements(
        page=_with_bodies(ranked, query_cte, ranked.c.score, ranked.c.total),
        tail_page=_with_bodies(tail, query_cte, None, None),
        count=count,
        paths=select(ranked.c.path).order_by(ranked.c.score, ranked.c.path),
        tail_paths=select(tail.c.path).order_by(tail.c.position),
    )


def _matches(t: Any, query: Any, by_directory: bool, by_tag: bool) -> list[Any]:
    matches: list[Any] = [t.c.document.op("@@")(query)]
    if by_directory:
        low, high = bindparam("folder_low", type_=String), bindparam("folder_high", type_=String)
        matches += [t.c.note_path >= low, t.c.note_path < high]
    if by_tag:
        key = bindparam("tag", type_=String)
        matches.append(
            exists(select(Tag.key).where(Tag.note_path == t.c.note_path, tag_condition(key)))
        )
    return matches


def _with_bodies(rows: Any, query_cte: Any, score: Any, total: Any) -> Select[Any]:
    """(path, body, score, total) of `rows`, in their order; a row of the tail gets its score
    here (a page holds few) and no total."""
    body = note_texts.alias("b")
    if score is None:
        pin = case(
            (body.c.note_path.in_(bindparam("pinned", expanding=True)), bindparam("pin")),
            else_=0.0,
        )
        score = -func.ts_rank_cd(_weights(), body.c.document, query_cte.c.q) + pin
        order = [rows.c.position]
        total = literal_column("NULL::bigint")
    else:
        order = [score, rows.c.path]
    return (
        select(rows.c.path, func.left(body.c.body, SNIPPET_READ_CHARS), score, total)
        .select_from(rows)
        .join(body, body.c.note_path == rows.c.path)
        .join(query_cte, literal(True))
        .order_by(*order)
    )
