"""All of Weaver's SQL lives in this package: `write` for the indexer, `read` for the tools.

Queries are portable SQL through SQLAlchemy Core; anything SQLite-only is kept in `sqlite.py`.
Functions take a `Connection` so the caller owns the transaction (one `engine.begin()` per
unit of work).
"""
