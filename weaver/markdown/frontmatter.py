"""A note's YAML frontmatter: where the block is, its values as JSON sees them, its links.

Pure: no I/O. Obsidian reads frontmatter with a JavaScript YAML parser, so values are decoded the
way it would (YAML 1.2 core scalars, string keys, no dates) and made JSON-serialisable for the
cache. A block that fails to decode is reported as an error message naming the line, never
raised: the note is still indexed, without frontmatter.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from itertools import count
from typing import TYPE_CHECKING, Any, NamedTuple

import yaml
from frontmatter.default_handlers import YAMLHandler
from yaml.constructor import ConstructorError

from weaver.markdown.patterns import WIKILINK, is_valid_tag, split_wikilink

__all__ = [
    "Frontmatter",
    "FrontmatterLink",
    "ObsidianYAMLHandler",
    "frontmatter_aliases",
    "frontmatter_tags",
    "read_frontmatter",
    "scalar_text",
]

_FM_OPEN = re.compile(r"---[ \t]*\r?\n")
_FM_CLOSE = re.compile(r"\n---[ \t]*\r?(?=\n|\Z)")  # starts with "\n": a fast scan
_STR_TAG = "tag:yaml.org,2002:str"
_MAX_FM_VALUES = 100_000  # an alias bomb (&a [*b, *b, ...]) must not expand into gigabytes
_INT64 = 2**63

if TYPE_CHECKING:
    _LoaderBase = yaml.SafeLoader
else:  # libyaml's parser when present: much faster, same nodes and error marks
    _LoaderBase = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class FrontmatterLink(NamedTuple):
    """A wikilink in a frontmatter string value; relation is the top-level key it sits under."""

    target: str
    alias: str | None
    subpath: str | None
    relation: str | None
    line: int  # 0-based line in the file


@dataclass(frozen=True, slots=True)
class Frontmatter:
    data: dict[str, Any]  # {} when there is no block, an empty one, or an invalid one
    links: tuple[FrontmatterLink, ...]
    error: str | None
    body_start: int  # offset in the text where the body begins


class _ObsidianYamlLoader(_LoaderBase):
    """A safe loader with YAML 1.2 core scalars, as JavaScript parsers read them.

    Obsidian keeps `2024-07-21` a string (see yaml_all_property_types_populated in the dumps), so
    there is no timestamp resolver; likewise `yes`/`on` stay strings and `010` is ten.
    """

    yaml_implicit_resolvers: dict[Any, Any] = {}  # noqa: RUF012  (PyYAML's class-level registry)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        # JavaScript object keys are strings: `1:` and `true:` must stay two keys, not collide.
        self.flatten_mapping(node)
        mapping: dict[Hashable, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                mark = key_node.start_mark
                raise ConstructorError(None, None, "found unhashable key", mark)
            mapping[_json_key(key)] = self.construct_object(value_node, deep=deep)
        return mapping


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node)
    if text[:2] in ("0o", "0x"):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text, 10)


for _tag, _pattern, _first in (
    ("bool", r"(?:true|True|TRUE|false|False|FALSE)", "tTfF"),
    ("int", r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)", "-+0123456789"),
    (
        "float",
        r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))",
        "-+0123456789.",
    ),
    ("null", r"(?:~|null|Null|NULL|)", ["~", "n", "N", ""]),
    ("merge", r"<<", "<"),
):
    _ObsidianYamlLoader.add_implicit_resolver(
        f"tag:yaml.org,2002:{_tag}", re.compile(rf"^{_pattern}$"), list(_first)
    )
_ObsidianYamlLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _frontmatter_span(text: str) -> tuple[int, int, int] | None:
    """(yaml start, yaml end, body start): `---` on line 1 up to the next line that is `---`."""
    opening = _FM_OPEN.match(text)
    closing = _FM_CLOSE.search(text, opening.end() - 1) if opening else None
    if opening is None or closing is None:
        return None
    body = closing.end() + text.startswith("\n", closing.end())
    return opening.end(), closing.start() + 1, body


def _load_yaml(source: str) -> tuple[Any, yaml.Node | None]:
    """Compose and construct in one pass, keeping the node tree for line numbers."""
    loader = _ObsidianYamlLoader(source)
    try:
        node = loader.get_single_node()
        return (None if node is None else loader.construct_document(node)), node
    finally:
        loader.dispose()


class ObsidianYAMLHandler(YAMLHandler):
    """python-frontmatter handler with Obsidian's block rules and scalar types.

    frontmatter.loads() strips the text before splitting, which accepts a block after blank lines
    and shifts line numbers, so read_frontmatter calls split() on the raw text itself.
    """

    def detect(self, text: str) -> bool:
        return _frontmatter_span(text) is not None

    def split(self, text: str) -> tuple[str, str]:
        span = _frontmatter_span(text)
        if span is None:
            raise ValueError("no frontmatter block starting on line 1")
        return text[span[0] : span[1]], text[span[2] :]

    def load(self, fm: str, **kwargs: object) -> Any:
        return _to_json(_load_yaml(fm)[0], count())


_HANDLER = ObsidianYAMLHandler()


class _TooLargeError(Exception):
    """The frontmatter expands (through YAML aliases) to more values than we store."""


def _json_key(key: object) -> str:
    """Keys become strings the way JavaScript spells them: 1 -> "1", true -> "true"."""
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return key.isoformat() if isinstance(key, dt.date | dt.time) else str(key)


def _to_json(value: Any, budget: Iterator[int]) -> Any:
    """A JSON-serialisable copy: NaN/inf -> None, bytes -> str, keys -> str, 64-bit ints."""
    if next(budget) > _MAX_FM_VALUES:
        raise _TooLargeError
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value if -_INT64 <= value < _INT64 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {_json_key(k): _to_json(v, budget) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [_to_json(v, budget) for v in items]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value.isoformat() if isinstance(value, dt.date | dt.time) else str(value)


def _yaml_error(path: str, exc: Exception) -> str:
    mark = exc.problem_mark or exc.context_mark if isinstance(exc, yaml.MarkedYAMLError) else None
    # mark.line counts from the first YAML line, which is file line 2 (1-based).
    where = f" at line {mark.line + 2}" if mark is not None else ""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        detail = exc.problem
    elif isinstance(exc, _TooLargeError | RecursionError):
        detail = "too many or too deeply nested values"
    else:
        detail = str(exc).split("\n", 1)[0] or type(exc).__name__
    return f"invalid YAML frontmatter{where}: {detail} ({path})"


def read_frontmatter(path: str, text: str) -> Frontmatter:
    """The frontmatter block at the start of text (path names the note in error messages)."""
    try:
        source, body = _HANDLER.split(text)
    except ValueError:
        return Frontmatter({}, (), None, 0)
    body_start = len(text) - len(body)
    try:
        data, node = _load_yaml(source)
        clean = _to_json(data, count())
    except (yaml.YAMLError, ValueError, RecursionError, _TooLargeError) as exc:
        return Frontmatter({}, (), _yaml_error(path, exc), body_start)
    if clean is None:  # an empty block
        return Frontmatter({}, (), None, body_start)
    if not isinstance(clean, dict) or not isinstance(node, yaml.MappingNode):
        kind = "a list" if isinstance(clean, list) else "a scalar"
        error = f"invalid YAML frontmatter at line 2: expected a mapping, found {kind} ({path})"
        return Frontmatter({}, (), error, body_start)
    return Frontmatter(clean, tuple(_frontmatter_links(node)), None, body_start)


def _string_scalars(node: yaml.Node) -> Iterator[yaml.ScalarNode]:
    """String scalars below node in document order; each aliased node once (bomb-safe)."""
    seen: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, yaml.ScalarNode) and current.tag == _STR_TAG:
            yield current
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(reversed(current.value))
        elif isinstance(current, yaml.MappingNode):
            stack.extend(reversed([value for _, value in current.value]))


def _frontmatter_links(root: yaml.MappingNode) -> Iterator[FrontmatterLink]:
    for key_node, value_node in root.value:
        relation = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else None
        for scalar in _string_scalars(value_node):
            for match in WIKILINK.finditer(scalar.value):
                parts = split_wikilink(match.group(1))
                if parts is not None:
                    target, alias, subpath, _ = parts
                    line = scalar.start_mark.line + 1  # + the opening `---`
                    yield FrontmatterLink(target, alias, subpath, relation, line)


# ---------------------------------------------------------------- reading values


def _get(frontmatter: Mapping[str, Any], key: str) -> Any:
    """frontmatter[key], else the first non-null value under a key spelled in another case."""
    if frontmatter.get(key) is not None:
        return frontmatter[key]
    return next((v for k, v in frontmatter.items() if k.casefold() == key and v is not None), None)


def frontmatter_tags(frontmatter: Mapping[str, Any]) -> tuple[str, ...]:
    """Tags of the `tags` key as Obsidian's parseFrontMatterTags reads them, without '#'.

    A list, or one string holding one tag; never split on commas or spaces, and an invalid tag
    (`a, b`, `two words`, `1984`) is dropped, as Obsidian 1.9 does.
    """
    value = _get(frontmatter, "tags")
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    tags = (item.strip().removeprefix("#") for item in items if isinstance(item, str))
    return tuple(tag for tag in tags if is_valid_tag(tag))


def scalar_text(value: Any) -> str | None:
    """A scalar value as text (`true`, `3`, `x`); None for null, a mapping or a list."""
    if value is None or isinstance(value, dict | list):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def frontmatter_aliases(frontmatter: Mapping[str, Any]) -> tuple[str, ...]:
    """The `aliases` key: a list or one string (not split on commas), blanks dropped."""
    value = _get(frontmatter, "aliases")
    texts = (scalar_text(item) for item in (value if isinstance(value, list) else [value]))
    return tuple(dict.fromkeys(t.strip() for t in texts if t is not None and t.strip()))
