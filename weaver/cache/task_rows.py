"""Tasks and Dataview inline fields as cache rows.

A task's `status_type` is its status character read through the vault's Tasks plugin settings
(`weaver.tasks.statuses`) when it is written. When the settings change, the rows are re-labelled
in place, one UPDATE per configured symbol, rather than every note being parsed again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from sqlalchemy import Connection, update

from weaver.cache.models import Task
from weaver.cache.rows import JSON_FROM, STATUS_CHAR_AT, TASK_ROW_FIELDS, NoteRecord
from weaver.tasks.statuses import StatusRegistry

# The digest (`StatusRegistry.digest`) of the settings the task rows were labelled with.
STATUSES_KEY = "task_statuses"

# What the writer adds to a `TaskRow` in front of it, then the row's values.
TASK_COLUMNS = ("note_path", "status_type", *TASK_ROW_FIELDS)


def task_rows(
    record: NoteRecord, statuses: StatusRegistry, encode: Callable[[Any], Any]
) -> Iterator[tuple[Any, ...]]:
    """The `TASK_COLUMNS` of each task of a note; `encode` turns JSON values into what the
    driver takes."""
    # Most tasks have no tags, dependencies, other fields or warnings: those four values are
    # encoded once per note rather than once per task (a big index writes 300,000 tasks).
    empty_list, empty_dict = encode([]), encode({})
    plain = (empty_list, empty_list, empty_dict, empty_list)
    for row in record.tasks:
        tags, depends_on, fields, warnings = row[JSON_FROM:]
        if tags or depends_on or fields or warnings:
            encoded = (
                encode(list(tags)) if tags else empty_list,
                encode(list(depends_on)) if depends_on else empty_list,
                encode(dict(fields)) if fields else empty_dict,
                encode(list(warnings)) if warnings else empty_list,
            )
        else:
            encoded = plain
        status_type = statuses.type_of(row[STATUS_CHAR_AT])
        yield (record.path, status_type, *row[:JSON_FROM], *encoded)


def inline_fields_value(record: NoteRecord) -> list[list[Any]] | None:
    """`notes.inline_fields`: [[key, value, line], ...], None when the note has none."""
    return [[f.key, f.value, f.line] for f in record.inline_fields] or None


# A plain decimal number, as Dataview reads `rating:: 4.5` as a number rather than text.
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def inline_property_rows(
    record: NoteRecord,
) -> Iterator[tuple[str, str, str | None, float | None]]:
    """`note_properties` rows for the inline fields whose key (case-folded) the frontmatter
    lacks: the frontmatter wins a clash, as it is what Obsidian's Properties show."""
    front = {str(name).casefold() for name in record.frontmatter}
    for field in record.inline_fields:
        key = field.key.casefold()
        if key in front:
            continue
        if _NUMBER.fullmatch(field.value):
            yield record.path, key, None, float(field.value)
        else:
            yield record.path, key, field.value or None, None


def relabel_tasks(conn: Connection, statuses: StatusRegistry) -> int:
    """Give every task row the status type `statuses` says, one UPDATE per configured symbol
    and one for the symbols none configures (the plugin's unknown TODO). Returns rows changed."""
    changed = 0
    for symbol in statuses.symbols:
        wanted = statuses.type_of(symbol)
        statement = (
            update(Task)
            .where(Task.status_char == symbol, Task.status_type != wanted)
            .values(status_type=wanted)
        )
        changed += conn.execute(statement.execution_options(synchronize_session=False)).rowcount
    unknown = StatusRegistry.unknown_type
    rest = (
        update(Task)
        .where(Task.status_char.not_in(statuses.symbols), Task.status_type != unknown)
        .values(status_type=unknown)
    )
    changed += conn.execute(rest.execution_options(synchronize_session=False)).rowcount
    return changed
