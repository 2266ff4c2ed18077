"""Change a note's frontmatter (Obsidian's "properties") without disturbing what the user wrote.

Pure: text in, text out (LF newlines). The block is loaded with ruamel.yaml's round-trip loader,
changed, and dumped again: comments, key order, quoting and flow or block style stay as written,
and the list indentation is the one the block already uses (Obsidian's own, `  - item`, for a
new block). A block that is not valid YAML is refused with the parse error and its file line,
never rewritten. `tags` are written as Obsidian writes them: a block list of names without '#'.

- `set_`: keys to set (an existing key keeps its spelling and place; None deletes it);
- `merge`: like set, but a list adds the items missing from the existing list (tags and
  aliases compared case-insensitively) and a mapping merges key by key;
- `delete`: keys to remove (a missing key is no error).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from weaver.markdown.frontmatter import ObsidianYAMLHandler
from weaver.markdown.patch import TextEditError, split_body
from weaver.markdown.patterns import is_valid_tag

_YAML = ObsidianYAMLHandler()
FOLDED_KEYS = frozenset({"tags", "aliases", "cssclasses"})  # lists Obsidian compares by name
_SEQUENCE_ITEM = re.compile(r"^[A-Za-z_][^:\n]*:[ \t]*\n([ \t]*)- ", re.MULTILINE)
_NESTED_KEY = re.compile(r"^[^ \t#\n][^:\n]*:[ \t]*\n([ \t]+)[^ \t\-#\n][^:\n]*:", re.MULTILINE)


def edit_frontmatter(
    text: str,
    *,
    set_: Mapping[str, Any] | None = None,
    merge: Mapping[str, Any] | None = None,
    delete: Iterable[str] = (),
) -> str:
    """The note with its frontmatter changed; the body is untouched."""
    block, body = split_body(text)
    source = _inner(block)
    yaml = _round_trip(source)
    data = _load(yaml, source)
    for key in delete:
        _pop(data, key)
    for key, value in (set_ or {}).items():
        if value is None:
            _pop(data, key)
        else:
            _put(data, key, _clean_value(key, value))
    for key, value in (merge or {}).items():
        _merge_key(data, key, _clean_value(key, value))
    if not data:
        return body
    out = io.StringIO()
    yaml.dump(data, out)
    return f"---\n{out.getvalue()}---\n{body}"


def add_tags(text: str, tags: Sequence[str]) -> str:
    return edit_frontmatter(text, merge={"tags": list(tags)})


def remove_tags(text: str, tags: Sequence[str]) -> str:
    """The frontmatter `tags` without these (case-insensitive); the key goes when emptied."""
    block, body = split_body(text)
    source = _inner(block)
    yaml = _round_trip(source)
    data = _load(yaml, source)
    key = _find_key(data, "tags")
    if key is None:
        return text
    gone = {tag.strip().removeprefix("#").casefold() for tag in tags}
    value = data[key]
    if isinstance(value, str):
        kept = [t for t in re.split(r"[,\s]+", value) if t and _fold(t) not in gone]
        if len(kept) == len([t for t in re.split(r"[,\s]+", value) if t]):
            return text
        data[key] = _obsidian_list(kept) if kept else None
    elif isinstance(value, list):
        for index in reversed(range(len(value))):
            if isinstance(value[index], str) and _fold(value[index]) in gone:
                del value[index]
    if not data[key]:
        del data[key]
    if not data:
        return body
    out = io.StringIO()
    yaml.dump(data, out)
    return f"---\n{out.getvalue()}---\n{body}"


def clean_tag_names(tags: Iterable[str]) -> list[str]:
    """Names without '#', first spelling kept; TextEditError for one Obsidian rejects."""
    seen: dict[str, str] = {}
    for tag in tags:
        clean = str(tag).strip().removeprefix("#")
        if not is_valid_tag(clean):
            raise TextEditError(
                f"{tag!r} is not a valid tag (letters, digits, _ - / only; not only digits)"
            )
        seen.setdefault(clean.casefold(), clean)
    return list(seen.values())


def _fold(item: str) -> str:
    return item.strip().removeprefix("#").casefold()


def _inner(block: str) -> str:
    """The YAML between the `---` lines of a block as written ("" for none)."""
    if not block:
        return ""
    source: str
    source, _ = _YAML.split(block if block.endswith("\n") else block + "\n")
    return source if not source or source.endswith("\n") else source + "\n"


def _round_trip(source: str) -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 1_000_000  # never fold a long value the user kept on one line
    offset_match = _SEQUENCE_ITEM.search(source)
    offset = len(offset_match.group(1).expandtabs()) if offset_match else 2
    mapping_match = _NESTED_KEY.search(source)
    mapping = len(mapping_match.group(1).expandtabs()) if mapping_match else 2
    yaml.indent(mapping=mapping, sequence=offset + 2, offset=offset)
    return yaml


def _load(yaml: YAML, source: str) -> CommentedMap:
    if not source.strip():
        return CommentedMap()
    try:
        data = yaml.load(source)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 2}" if mark is not None else ""  # + the opening ---
        raise TextEditError(
            f"the note's frontmatter is not valid YAML{where}: {exc.problem or exc}"
        ) from None
    except (YAMLError, ValueError, RecursionError) as exc:
        raise TextEditError(f"the note's frontmatter is not valid YAML: {exc}") from None
    if data is None:
        return CommentedMap()
    if not isinstance(data, CommentedMap):
        raise TextEditError("the note's frontmatter is not a mapping of keys to values")
    return data


def _find_key(data: Mapping[str, Any], key: str) -> str | None:
    """The key as the note spells it (`Tags:` counts as `tags`, as Obsidian reads it)."""
    if key in data:
        return key
    return next((k for k in data if isinstance(k, str) and k.casefold() == key.casefold()), None)


def _pop(data: CommentedMap, key: str) -> None:
    found = _find_key(data, key)
    if found is not None:
        del data[found]


def _put(data: CommentedMap, key: str, value: Any) -> None:
    data[_find_key(data, key) or key] = value


def _clean_value(key: str, value: Any) -> Any:
    folded = key.casefold()
    if folded == "tags":
        items = value if isinstance(value, list) else re.split(r"[,\s]+", str(value))
        return _obsidian_list(clean_tag_names(t for t in items if str(t).strip()))
    if folded == "aliases":
        items = value if isinstance(value, list) else [value]
        return _obsidian_list(str(a).strip() for a in items if str(a).strip())
    return _to_yaml(value)


def _obsidian_list(items: Iterable[str]) -> CommentedSeq:
    seq = CommentedSeq(items)
    seq.fa.set_block_style()
    return seq


def _to_yaml(value: Any) -> Any:
    if isinstance(value, Mapping):
        return CommentedMap((str(k), _to_yaml(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return CommentedSeq(_to_yaml(v) for v in value)
    return value


def _merge_key(data: CommentedMap, key: str, value: Any) -> None:
    found = _find_key(data, key)
    if found is None or data[found] is None:
        data[found or key] = value
        return
    current = data[found]
    if isinstance(value, list):
        if isinstance(current, str) and key.casefold() in FOLDED_KEYS:
            current = _obsidian_list(t for t in re.split(r"[,\s]+", current) if t)
            data[found] = current
        elif not isinstance(current, list):
            current = _obsidian_list([current])
            data[found] = current
        folded = key.casefold() in FOLDED_KEYS
        have = {_fold(v) if folded and isinstance(v, str) else repr(v) for v in current}
        for item in value:
            mark = _fold(item) if folded and isinstance(item, str) else repr(item)
            if mark not in have:
                current.append(item)
                have.add(mark)
    elif isinstance(value, Mapping) and isinstance(current, Mapping):
        for inner_key, inner_value in value.items():
            _merge_key(current, inner_key, inner_value)  # type: ignore[arg-type]
    else:
        data[found] = value
