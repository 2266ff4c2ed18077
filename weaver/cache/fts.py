"""Full-text search over notes: FTS5 on SQLite, and the one entry point on PostgreSQL too.

`notes_fts` holds each note's title, its other names (file name, aliases, first H1), its
headings and its body (the text after its frontmatter), tokenised by `porter unicode61
remove_diacritics 2`: case, accents and English inflections are ignored ("Café running" finds
"cafe run"). Ranking is BM25 with column weights (`TITLE_WEIGHT`, `NAMES_WEIGHT`,
`HEADINGS_WEIGHT` times a body word), so a note named for the query outranks notes that only
mention it. A run of Chinese or Japanese characters is found wherever it stands
(`markdown.cjk.segment`); unquoted in a query, it is split into its two-character words
(`_split_cjk`). User text becomes an FTS5 expression with `fts_query`: every term is quoted, so
no input can reach FTS5's own syntax or raise a syntax error.

On PostgreSQL the same functions hand over to `cache.pg_search`, with the same arguments and
answers; on any other dialect the writers here do nothing and `search_notes` says so. The table
is made by the migrations (`0014`), not the models: `is_search_table` leaves it out of the
"models equal migrations" check. Why it is built this way: docs/architecture.md, "cache/fts.py".

It stays whole at ~560 lines as the one entry point of full-text search on both dialects;
`fts_query`'s query language (with `segment`) is the seam should it grow.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    ColumnClause,
    Connection,
    Select,
    String,
    bindparam,
    case,
    column,
    exists,
    func,
    literal_column,
    select,
    table,
)

from weaver.cache import pg_search
from weaver.cache.dialect import is_postgres
from weaver.cache.models import Note, Tag
from weaver.cache.pg_search import PIN_SCORE
from weaver.cache.read import tag_condition
from weaver.errors import CacheError
from weaver.markdown.cjk import has_cjk, segment, unsegment

if TYPE_CHECKING:
    from weaver.cache.rows import NoteRecord

FTS_TABLE = "notes_fts"
ATTACHMENT_FTS_TABLE = "attachment_fts"  # `cache.attachment_text`: PDF pages
ATTACHMENT_DOC_FTS_TABLE = "attachment_doc_fts"  # and whole PDFs
# Their PostgreSQL counterparts (`cache.pg_attachment_search`).
PG_ATTACHMENT_TABLES = ("attachment_page_search", "attachment_doc_search")
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
CREATE_FTS = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} "
    f"USING fts5(path UNINDEXED, title, names, headings, body, tokenize = '{FTS_TOKENIZER}')"
)
# bm25 weights per column (path, title, names, headings, body).
TITLE_WEIGHT = 10.0
NAMES_WEIGHT = 8.0
HEADINGS_WEIGHT = 3.0
BODY_WEIGHT = 1.0
BODY_COLUMN = 4  # for snippet()
# Han, kana, CJK symbols and punctuation, half/full-width forms (as `markdown.cjk`): a run of
# CJK letters (not their punctuation: `，` or `？` ends a run).
_CJK_RANGES = (
    "\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f"
)
_CJK_LETTERS = re.compile(f"((?:(?=[{_CJK_RANGES}])\\w)+)")
SNIPPET_OPEN = "<mark>"
SNIPPET_CLOSE = "</mark>"
SNIPPET_ELLIPSIS = "…"
SNIPPET_TOKENS = 16
# FTS5's snippet() weighs every window around every hit of the query in a note: its time grows
# with the square of the hits (a 4 MiB note with the word on each of 58,000 lines: over two
# minutes, holding its connection and the thread). Notes with a body longer than this (in
# characters) get their snippet from `bounded_snippet` instead: linear, around the first hit.
SNIPPET_SCAN_MAX = 32_768
# How much of a big note's body `bounded_snippet` reads, at most.
SNIPPET_READ_MAX = 8 * 1024 * 1024
# FTS5 copes with thousands of terms, but nobody types them: the rest are ignored.
MAX_TERMS = 32
_CHUNK = 900

_fts = table(
    FTS_TABLE,
    column("rowid"),
    column("path"),
    column("title"),
    column("names"),
    column("headings"),
    column("body"),
)


def is_search_table(name: str) -> bool:
    """The FTS table and the shadow tables FTS5 creates beside it (`notes_fts_data`, ...), and
    PostgreSQL's `note_texts` (made by migration `0017` on that dialect only), and the PDFs'
    `attachment_fts` and `attachment_doc_fts` with their shadow tables (migration `0025`,
    SQLite only), or their `tsvector` tables on PostgreSQL (migration `0026`)."""
    tables = (FTS_TABLE, ATTACHMENT_FTS_TABLE, ATTACHMENT_DOC_FTS_TABLE)
    pg_tables = (pg_search.TEXT_TABLE, *PG_ATTACHMENT_TABLES)
    return name in (*tables, *pg_tables) or name.startswith(tuple(table + "_" for table in tables))


def supported(conn: Connection) -> bool:
    return conn.dialect.name == "sqlite" or is_postgres(conn)


# ---------------------------------------------------------------- writes (from cache.write)


def insert_search(conn: Connection, records: Sequence[NoteRecord], first_rowid: int) -> None:
    """Index these notes' titles and bodies under rowids `first_rowid`, `first_rowid + 1`, ...
    (the ones their `notes` rows carry)."""
    if not records or not supported(conn):
        return
    if is_postgres(conn):
        pg_search.insert_texts(conn, records, [_names(r) for r in records], segment)
        return
    rows = [
        (
            first_rowid + i,
            r.path,
            segment(r.title),
            segment(_names(r)),
            segment(r.headings),
            segment(r.body) if r.search_body is None else r.search_body,
        )
        for i, r in enumerate(records)
    ]
    # OR REPLACE: should a row whose note is gone ever hold one of these rowids, it goes,
    # rather than failing this pass and every pass after it.
    conn.exec_driver_sql(
        f"INSERT OR REPLACE INTO {FTS_TABLE} (rowid, path, title, names, headings, body) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        rows,
    )


def _names(record: NoteRecord) -> str:
    """What else a note is called: its file name (without `.md`), its aliases, its first H1."""
    name = record.path.rsplit("/", 1)[-1]
    stem = name[:-3] if name.lower().endswith(".md") else name
    return "\n".join(dict.fromkeys([stem, *record.aliases, record.heading or ""]))


def delete_search(conn: Connection, paths: Collection[str]) -> None:
    """Forget these notes' rows (paths of attachments or unknown notes are harmless); before
    their `notes` rows go, which hold the rowids."""
    if not paths or not supported(conn):
        return
    if is_postgres(conn):
        pg_search.delete_texts(conn, paths)
        return
    paths = list(paths)
    for start in range(0, len(paths), _CHUNK):
        rowids = select(Note.search_rowid).where(Note.path.in_(paths[start : start + _CHUNK]))
        conn.execute(_fts.delete().where(_fts.c.rowid.in_(rowids)))


def note_bodies(conn: Connection, paths: Sequence[str]) -> dict[str, str]:
    """The indexed body of each note in `paths` (one query per 900 paths)."""
    if not paths or not supported(conn):
        return {}
    if is_postgres(conn):
        return pg_search.note_bodies(conn, paths)
    found: dict[str, str] = {}
    for start in range(0, len(paths), _CHUNK):
        rows = conn.execute(
            select(Note.path, _fts.c.body)
            .join_from(Note, _fts, _fts.c.rowid == Note.search_rowid)
            .where(Note.path.in_(paths[start : start + _CHUNK]))
        )
        found.update((row.path, unsegment(row.body)) for row in rows)
    return found


# ---------------------------------------------------------------- queries


@dataclass(frozen=True, slots=True)
class SearchHit:
    path: str
    title: str
    snippet: str
    score: float  # -bm25: higher is better
    modified: int


@dataclass(frozen=True, slots=True)
class SearchPage:
    hits: list[SearchHit]
    total: int


def search(
    conn: Connection,
    expression: str,
    limit: int,
    offset: int,
    *,
    directory: str | None = None,
    tag: str | None = None,
    pinned: Sequence[str] = (),
) -> SearchPage:
    """Notes matching an FTS5 `expression` (from `fts_query`), best first, with snippets.

    `directory` (a folder, with its subfolders) and `tag` (a normalised key; nested tags match)
    narrow the matches. Ties are ordered by rowid, so pages neither overlap nor skip while the
    cache does not change. The matches are counted only when the page does not show where they
    end. `pinned` notes (those named exactly what was searched for: the caller knows names) come
    first when they match.
    """
    if not supported(conn):
        raise CacheError(
            f"full-text search needs a SQLite or PostgreSQL cache, not {conn.dialect.name}"
        )
    if is_postgres(conn):
        return _search_postgres(conn, expression, limit, offset, directory, tag, pinned)
    statements = _search_statements(bool(directory), tag is not None)
    values = _search_values(expression, limit, offset, directory, tag, _rowids(conn, pinned))
    page = conn.execute(statements.page, values | {"scan_max": SNIPPET_SCAN_MAX}).all()
    if len(page) < limit and (page or offset == 0):  # the page holds the last match
        total = offset + len(page)
    else:
        total = conn.execute(statements.count, values).scalar_one()
    listed = conn.execute(_LISTED, {"paths": [row[0] for row in page]}).all()
    notes = {path: (title, modified) for path, title, modified in listed}
    hits = []
    for path, snippet_text, score, rowid in page:
        title, modified = notes[path]
        if snippet_text is None:  # a big note: one at a time, so memory holds one body
            snippet_text = bounded_snippet(_body_head(conn, rowid), expression)
        hits.append(SearchHit(path, title, unsegment(snippet_text), _score(score), modified))
    return SearchPage(hits, total)


def ranked_paths(
    conn: Connection,
    expression: str,
    depth: int,
    *,
    directory: str | None = None,
    tag: str | None = None,
) -> list[str]:
    """The paths of the `depth` best matches, best first, as `search` ranks them: what a fusion
    of rankings needs, without `search`'s snippets and count (for a word most notes hold,
    those cost more than the ranking)."""
    if is_postgres(conn):
        return pg_search.ranked_paths(conn, expression, depth, directory=directory, tag=tag)
    statements = _search_statements(bool(directory), tag is not None)
    values = _search_values(expression, depth, 0, directory, tag, [-1])
    return list(conn.execute(statements.paths, values).scalars())


def count_matches(
    conn: Connection, expression: str, *, directory: str | None = None, tag: str | None = None
) -> int:
    """How many notes match `expression` under the filters: what a fusion that read only the
    best matches (`ranked_paths`) needs to say how many there are in all."""
    if is_postgres(conn):
        return pg_search.count_matches(conn, expression, directory=directory, tag=tag)
    statements = _search_statements(bool(directory), tag is not None)
    values = _search_values(expression, 0, 0, directory, tag, [-1])
    return int(conn.execute(statements.count, values).scalar_one())


def _search_values(
    expression: str,
    limit: int,
    offset: int,
    directory: str | None,
    tag: str | None,
    pinned_rowids: list[int],
) -> dict[str, Any]:
    values: dict[str, Any] = {
        "expression": expression,
        "limit": limit,
        "offset": offset,
        "pinned": pinned_rowids,
    }
    return values | pg_search.filter_values(directory, tag)


def _search_postgres(
    conn: Connection,
    expression: str,
    limit: int,
    offset: int,
    directory: str | None,
    tag: str | None,
    pinned: Sequence[str],
) -> SearchPage:
    page, total = pg_search.search(
        conn, expression, limit, offset, directory=directory, tag=tag, pinned=pinned
    )
    listed = conn.execute(_LISTED, {"paths": [path for path, _, _ in page]}).all()
    notes = {path: (title, modified) for path, title, modified in listed}
    hits = [
        SearchHit(
            path,
            notes[path][0],
            _joined_marks(bounded_snippet(body, expression)),
            _score(score),
            notes[path][1],
        )
        for path, body, score in page
    ]
    return SearchPage(hits, total)


def _joined_marks(snippet: str) -> str:
    """A CJK word is marked a character at a time (`<mark>插</mark><mark>件</mark>`); FTS5
    marks the phrase once, and so does this."""
    return snippet.replace(SNIPPET_CLOSE + SNIPPET_OPEN, "")


def get_note_text(conn: Connection, path: str) -> str | None:
    """The note as it was read, from the cache: PostgreSQL caches keep it (for readers on
    hosts without the files); None elsewhere, or for a path the cache has no text of."""
    return pg_search.get_note_text(conn, path) if is_postgres(conn) else None


def _body_head(conn: Connection, rowid: int) -> str:
    head = func.substr(_fts.c.body, 1, SNIPPET_READ_MAX)
    return conn.execute(select(head).where(_fts.c.rowid == rowid)).scalar() or ""


_PHRASE = re.compile(r'"((?:[^"]|"")*)"')
_WORD = re.compile(r"\w+")
# Endings the porter stemmer takes off, so that "running" in the query marks "run" in text.
_SUFFIXES = ("ing", "ed", "es", "s")


def bounded_snippet(body: str, expression: str) -> str:
    """A snippet like FTS5's (`SNIPPET_TOKENS` words, hits in `<mark>`), in time linear in
    `body`: the window starts a little before the first word matching a query term (by its
    stem, case-insensitively; FTS5 still decides what matches, this only shows where)."""
    stems = sorted({_stem(w) for p in _PHRASE.findall(expression) for w in _WORD.findall(p)})
    if not stems:
        return ""
    # A CJK character is a word of its own, wherever it stands (`segment`).
    alternatives = [re.escape(s) if has_cjk(s) else rf"\b{re.escape(s)}\w*" for s in stems]
    hit = re.compile("|".join(alternatives), re.IGNORECASE)
    first = hit.search(body)
    start = 0 if first is None else first.start()
    # Three words before the hit, the rest after it: read no further than the window needs
    # (a page of PostgreSQL hits makes twenty of these).
    leading: list[re.Match[str]] = []
    window: list[re.Match[str]] = []
    for word in _WORD.finditer(body, max(0, start - 200), start + 4000):
        if word.start() < start:
            leading = [*leading[-2:], word]
            continue
        if not window:
            window = leading[-3:]
        window.append(word)
        if len(window) == SNIPPET_TOKENS:
            break
    window = window or leading
    if not window:
        return ""
    low, high = window[0].start(), window[-1].end()
    text = hit.sub(lambda m: SNIPPET_OPEN + m.group(0) + SNIPPET_CLOSE, body[low:high])
    before = SNIPPET_ELLIPSIS if low > 0 else ""
    after = SNIPPET_ELLIPSIS if high < len(body) else ""
    return before + text + after


def _stem(word: str) -> str:
    word = word.lower()
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            # "running" -> "runn" -> "run", as porter undoubles the consonant
            return word[:-1] if word[-1] == word[-2] and word[-1] not in "lsz" else word
    return word


@dataclass(frozen=True, slots=True)
class _SearchStatements:
    page: Select[Any]
    count: Select[Any]
    paths: Select[Any]


@functools.cache
def _search_statements(by_directory: bool, by_tag: bool) -> _SearchStatements:
    """`search`'s statements for this combination of filters, with every value bound.

    Built once: SQLAlchemy takes longer to build them than SQLite takes to answer a search for
    a rare word. Parameters: `expression`, `limit`, `offset`, with a directory
    `folder_low`/`folder_high`, with a tag `tag`."""
    fts: ColumnClause[Any] = literal_column(FTS_TABLE)
    match = fts.match(bindparam("expression", type_=String))
    matches = [match]
    this_note = Note.search_rowid == _fts.c.rowid
    if by_directory:
        low, high = bindparam("folder_low", type_=String), bindparam("folder_high", type_=String)
        matches.append(
            exists(select(Note.path).where(this_note, Note.path >= low, Note.path < high))
        )
    if by_tag:
        key = bindparam("tag", type_=String)
        tagged = select(Tag.key).join(Note, Note.path == Tag.note_path)
        matches.append(exists(tagged.where(this_note, tag_condition(key))))
    bm25 = func.bm25(fts, 0.0, TITLE_WEIGHT, NAMES_WEIGHT, HEADINGS_WEIGHT, BODY_WEIGHT)
    # A pinned match scores below any BM25 (which is at most 0): first, still by BM25.
    pin = case((_fts.c.rowid.in_(bindparam("pinned", expanding=True)), PIN_SCORE), else_=0.0)
    score = (bm25 + pin).label("score")
    ranked = (
        select(_fts.c.rowid.label("id"), score)
        .where(*matches)
        .order_by(score, _fts.c.rowid)  # by the label: bm25() once per match, not twice
        .limit(bindparam("limit"))
        .offset(bindparam("offset"))
        .cte("ranked")
    )
    snippet = func.snippet(
        fts, BODY_COLUMN, SNIPPET_OPEN, SNIPPET_CLOSE, SNIPPET_ELLIPSIS, SNIPPET_TOKENS
    )
    # CASE evaluates only the branch taken: big bodies never reach snippet() (`bounded_snippet`).
    small = func.length(_fts.c.body) <= bindparam("scan_max")
    page = (
        select(_fts.c.path, case((small, func.coalesce(snippet, "")), else_=None), ranked.c.score)
        .join_from(ranked, _fts, _fts.c.rowid == ranked.c.id)
        .where(match)  # snippet() needs the match on this scan too
        .order_by(ranked.c.score, ranked.c.id)
        .add_columns(ranked.c.id)
    )
    # The ranked notes' paths from `notes` (by its search_rowid index): the FTS row would
    # load each body with its path.
    paths = (
        select(Note.path)
        .join_from(ranked, Note, Note.search_rowid == ranked.c.id)
        .order_by(ranked.c.score, ranked.c.id)
    )
    count = select(func.count()).select_from(_fts).where(*matches)
    return _SearchStatements(page, count, paths)


def _rowids(conn: Connection, paths: Sequence[str]) -> list[int]:
    if not paths:
        return [-1]  # no rowid: an empty IN list is spelt differently by each dialect
    rows = conn.execute(select(Note.search_rowid).where(Note.path.in_(list(paths)))).scalars()
    return [rowid for rowid in rows if rowid is not None] or [-1]


_LISTED = select(Note.path, Note.title, Note.modified).where(
    Note.path.in_(bindparam("paths", expanding=True))
)


def _score(rank: Any) -> float:
    # bm25() is negative, better matches more so; SQLite may hand back -0.0. A pinned note's
    # score is its BM25 alone, as for any other.
    value = float(rank or 0.0)
    if value <= PIN_SCORE / 2:
        value -= PIN_SCORE
    return round(-value, 6) + 0.0


# ---------------------------------------------------------------- user text -> FTS5

# A "quoted phrase" (closed), or a run of anything else up to whitespace or a quote.
_TOKEN = re.compile(r'"([^"]*)"|([^\s"]+)')
_OPERATORS = {"AND", "OR", "NOT"}


@dataclass(frozen=True, slots=True)
class _Term:
    text: str
    prefix: bool
    negated: bool


def fts_query(user_text: str) -> str | None:
    """A safe FTS5 expression for any text, or None when it holds nothing searchable.

    Words are ANDed; "a phrase" in double quotes matches as a phrase (an unbalanced quote is
    ignored); `word*` matches by prefix; an upper-case `OR` between terms makes either do;
    `-word` or `NOT word` excludes. Each term is quoted with `"` doubled, so `:`, `^`, `(`,
    `NEAR(`, `*` elsewhere and lower-case `and`/`or`/`not` are ordinary text. Terms with no
    letter or digit (punctuation, emoji) are dropped: FTS5 would find no token in them.
    """
    groups: list[list[_Term]] = []
    negated: list[_Term] = []
    join_next = negate_next = False
    for term_text, is_phrase in _tokens(user_text):
        if not is_phrase and term_text in _OPERATORS:
            join_next = term_text == "OR" and bool(groups)
            negate_next = term_text == "NOT"
            continue
        term = _term(term_text, is_phrase, negate_next)
        negate_next = False
        if term is None:
            continue
        words = [term] if is_phrase else _split_cjk(term)
        if term.negated:
            negated.append(term)
        elif join_next:
            groups[-1].extend(words)
        else:
            groups.append(words)
        join_next = False
        if sum(map(len, groups)) + len(negated) >= MAX_TERMS:
            break
    if not groups:
        return None
    # FTS5 takes juxtaposed phrases as AND, but not a phrase beside a parenthesised OR group
    # ('"a" ("b" OR "c")' is a syntax error): there the AND is written out.
    parts = [_group(g) for g in groups]
    expression = parts[0]
    for before, part in itertools.pairwise(parts):
        joint = " AND " if before.startswith("(") or part.startswith("(") else " "
        expression += joint + part
    if negated:
        expression = f"({expression}) NOT {_group(negated)}"
    return expression


def _tokens(user_text: str) -> list[tuple[str, bool]]:
    # An odd quote out opens no phrase: drop the last one, then pair the rest.
    if user_text.count('"') % 2:
        cut = user_text.rfind('"')
        user_text = user_text[:cut] + " " + user_text[cut + 1 :]
    return [
        (m.group(1), True) if m.group(1) is not None else (m.group(2), False)
        for m in _TOKEN.finditer(user_text)
    ]


def _term(raw: str, is_phrase: bool, negate: bool) -> _Term | None:
    prefix = False
    # A NUL (or another control character) ends a string in SQLite's C code: FTS5 refused the
    # whole query ("OperationalError"). It is no word character: it separates words.
    raw = "".join(" " if ord(char) < 32 else char for char in raw)
    if not is_phrase:
        if raw.startswith("-") and len(raw) > 1:
            negate, raw = True, raw[1:]
        prefix = raw.endswith("*")
        raw = raw.replace("*", " ")
    words = " ".join(raw.split())
    if not any(char.isalnum() for char in words):
        return None
    return _Term(words, prefix, negate)


def _split_cjk(term: _Term) -> list[_Term]:
    """A word holding a run of CJK letters, as the words it may be made of, any of which
    matches: the run's overlapping pairs of characters (most Chinese words are two), and the
    rest of the word's letters, so that a question written without spaces (如何同步我的手机) finds
    the notes holding its words, ranked by how many they hold (BM25 adds their weights), rather
    than only those holding the whole run. A word with a `*`, or excluded, is left whole."""
    if term.prefix or term.negated or not has_cjk(term.text):
        return [term]
    words: list[str] = []
    for piece in _CJK_LETTERS.split(term.text):
        if _CJK_LETTERS.fullmatch(piece):
            pairs = [piece[i : i + 2] for i in range(len(piece) - 1)]
            words += pairs or [piece]
        elif any(char.isalnum() for char in piece):
            words.append(" ".join(piece.split()))
    return [_Term(word, False, False) for word in dict.fromkeys(words)][:MAX_TERMS]


def _quoted(term: _Term) -> str:
    # CJK characters are tokens of their own in the index: a run of them (a quoted one, or a
    # pair from `_split_cjk`) is the phrase of its characters, which FTS5 makes of the quoted,
    # segmented text.
    quoted = '"' + segment(term.text).replace('"', '""') + '"'
    return quoted + "*" if term.prefix else quoted


def _group(terms: list[_Term]) -> str:
    if len(terms) == 1:
        return _quoted(terms[0])
    return "(" + " OR ".join(_quoted(t) for t in terms) + ")"
