"""Edits inside one note: append, prepend, a section or block, find and replace, frontmatter
keys, tags. One core, `patch_note`: read the note, check `expected_hash`, apply a pure
transform (`weaver.markdown.patch`, `.properties`), write atomically with the hash-as-read
check just before the rename (so a save in the editor meanwhile is never lost), bring the cache
in step. Notes with CRLF newlines are edited as LF and written back with CRLF; a BOM is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_args

from weaver.edits.steps import BOM, CacheSync, NoteChangedError, NoteEditError, Notes, write_note
from weaver.errors import NoteDecodeError
from weaver.markdown import patch, properties
from weaver.markdown.patch import BlockPosition, DiffSummary, Position, TextEditError
from weaver.vault.fs import MAX_NOTE_BYTES

# A transform: the note's text (LF newlines) -> (new text, matches changed).
Transform = Callable[[str], tuple[str, int]]


@dataclass(frozen=True, slots=True)
class Patched:
    path: str
    content_hash: str
    size: int
    changed: bool
    matches: int  # find/replace: matches replaced; other edits: 1 when the text changed
    diff: DiffSummary
    cache_synced: bool


@dataclass(frozen=True, slots=True)
class Replace:
    find: str
    replacement: str
    use_regex: bool = False
    ignore_case: bool = False
    include_frontmatter: bool = False
    allow_no_match: bool = False


@dataclass(frozen=True, slots=True)
class FrontmatterChange:
    set_: Mapping[str, Any] = field(default_factory=dict)
    merge: Mapping[str, Any] = field(default_factory=dict)
    delete: Sequence[str] = ()


def decode_text(path: str, data: bytes) -> tuple[str, bool]:
    """(text with LF newlines, whether the file used CRLF); NoteDecodeError if not UTF-8."""
    try:
        text = data.removeprefix(BOM).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NoteDecodeError(path, f"invalid byte at offset {exc.start}") from None
    crlf = "\r\n" in text
    return (text.replace("\r\n", "\n") if crlf else text), crlf


def encode_text(text: str, crlf: bool, bom: bool) -> bytes:
    data = (text.replace("\n", "\r\n") if crlf else text).encode("utf-8")
    return BOM + data if bom else data


def patch_note(
    app: Notes,
    path: str,
    transform: Transform,
    *,
    expected_hash: str | None,
    sync: CacheSync,
    operation: str = "edit_file",
    arguments: dict[str, Any] | None = None,
) -> Patched:
    """Apply `transform` to the note at `path` and write the result (one step of
    `weaver.edits.steps`: locked, journalled, atomic)."""
    clean = app.vault.note_path(path)
    seen: dict[str, Any] = {}

    def edit(data: bytes | None) -> bytes:
        if data is None:
            app.vault.note_file(clean)  # raises NoteNotFoundError
            raise NoteChangedError(clean, expected_hash, None)
        text, crlf = decode_text(clean, data)
        try:
            new_text, seen["matches"] = transform(text)
        except TextEditError as exc:
            raise NoteEditError(f"{exc} ({clean})") from None
        seen["text"], seen["new_text"] = text, new_text
        return encode_text(new_text, crlf, data.startswith(BOM))

    change = write_note(
        app,
        clean,
        edit,
        operation=operation,
        arguments=arguments or {},
        expected_hash=expected_hash,
        sync=sync,
    )
    diff = patch.summarize_diff(seen["text"], seen["new_text"])
    new = change.new or b""
    return Patched(
        clean,
        change.content_hash,
        len(new),
        change.changed,
        seen["matches"],
        diff,
        change.cache_synced,
    )


# ---------------------------------------------------------------- the transforms


def changed_once(edit: Callable[[str], str]) -> Transform:
    def transform(text: str) -> tuple[str, int]:
        new = edit(text)
        return new, int(new != text)

    return transform


def insert_transform(
    position: str, content: str, heading: str | None = None, block: str | None = None
) -> Transform:
    """append / prepend (the whole note), or before / after / end_of_section / replace a
    heading's section or a block (not end_of_section). Exactly one target for those."""
    if position in ("append", "prepend"):
        if heading is not None or block is not None:
            raise NoteEditError(f"{position!r} acts on the whole note: drop heading and block")
        edit = patch.append_text if position == "append" else patch.prepend_text
        return changed_once(lambda text: edit(text, content))
    if position not in get_args(Position):
        raise NoteEditError(
            f"unknown position {position!r}: use append, prepend, before, after, "
            "end_of_section or replace"
        )
    if (heading is None) == (block is None):
        raise NoteEditError(f"{position!r} needs exactly one target: a heading path or a block id")
    if heading is not None:
        where: Position = position  # type: ignore[assignment]
        return changed_once(lambda text: patch.edit_section(text, heading, where, content))
    if position not in get_args(BlockPosition):
        raise NoteEditError(f"{position!r} is the end of a heading's section: a block has none")
    at: BlockPosition = position  # type: ignore[assignment]
    assert block is not None
    return changed_once(lambda text: patch.edit_block(text, block, at, content))


def replace_transform(change: Replace) -> Transform:
    def transform(text: str) -> tuple[str, int]:
        new, count = patch.replace_text(
            text,
            change.find,
            change.replacement,
            use_regex=change.use_regex,
            ignore_case=change.ignore_case,
            include_frontmatter=change.include_frontmatter,
            max_chars=MAX_NOTE_BYTES,
        )
        if count == 0 and not change.allow_no_match:
            where = "the note" if change.include_frontmatter else "the note's body"
            raise TextEditError(f"{change.find!r} is not in {where}; nothing was changed")
        return new, count

    return transform


def frontmatter_transform(change: FrontmatterChange) -> Transform:
    if not (change.set_ or change.merge or change.delete):
        raise NoteEditError("nothing to change: give set, merge or delete")
    return changed_once(
        lambda text: properties.edit_frontmatter(
            text, set_=change.set_, merge=change.merge, delete=change.delete
        )
    )


def tags_transform(add: Sequence[str] = (), remove: Sequence[str] = ()) -> Transform:
    """Frontmatter tags added (missing ones only) and removed."""
    if not add and not remove:
        raise NoteEditError("nothing to change: give tags to add or remove")
    try:
        adding = properties.clean_tag_names(add)
        properties.clean_tag_names(remove)
    except TextEditError as exc:
        raise NoteEditError(str(exc)) from None

    def edit(text: str) -> str:
        if remove:
            text = properties.remove_tags(text, remove)
        return properties.add_tags(text, adding) if adding else text

    return changed_once(edit)
