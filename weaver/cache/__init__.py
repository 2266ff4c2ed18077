"""All of Weaver's SQL lives in this package: `write` for the indexer, `read` for the tools.

Queries are portable SQL through SQLAlchemy Core, on SQLite (the default) and PostgreSQL
(`database_url = "postgresql+psycopg://..."`, docs/postgres.md). Where the two differ, the
module says so at the spot: full-text search is FTS5 in `fts` and `tsvector` in `pg_search`
(`fts` hands over to it), the PRAGMAs and file checks are SQLite's (`db`, `bulk`, `recovery`).
Functions take a `Connection` so the caller owns the transaction (one `engine.begin()` per
unit of work).
"""
