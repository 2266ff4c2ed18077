"""The shapes of the tools' results, as pydantic models: they become each tool's `outputSchema`.

Field names are snake_case here and camelCase on the wire (`hasMore`, `executionTime`), as the
contract spells them. Every timestamp is an integer, Unix epoch milliseconds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

D = TypeVar("D", bound=BaseModel)


# Inline fields `get_file` lists: enough for any note written by hand, and a bound on one
# generated with thousands (`inlineFieldsTotal` counts them; get_file_content reads them all).
INLINE_FIELDS_SHOWN = 100


class WireModel(BaseModel):
    # Built from the core's dataclasses by attribute where the names match (`model_validate`).
    # `defer_build`: a model's validator is built when first used, not when its module is
    # imported: a server imports hundreds of them, most unused for a while or for good.
    model_config = ConfigDict(
        alias_generator=to_camel, validate_by_name=True, from_attributes=True, defer_build=True
    )

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def lean_schema(schema: dict[str, Any], *, descriptions: bool = True) -> dict[str, Any]:
    """The same JSON Schema, smaller and cheaper to check: a model used once inlined where it is
    used, one used more than once (or containing itself) kept once in `$defs` and referenced;
    `anyOf [X, null]` turned into `type: [X's type, "null"]`; pydantic's generated titles and
    `default: null` dropped; without `descriptions`, the description of every part dropped too.

    Clients check every result against the tool's `outputSchema`; the Python SDK does it with
    `jsonschema`, where a `$ref` is a registry lookup and an `anyOf` a nested validation per
    field, so the lean schema takes a good part off every client's check. Clients also put the
    whole tools/list answer into the model's context, where every byte counts: an output
    schema is listed without descriptions (`weaver://help/{tool}` has them).
    """
    defs: dict[str, Any] = schema.get("$defs", {})
    uses = Counter(_references(schema))
    kept: set[str] = set()

    def walk(node: Any, inside: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(item, inside) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            rest = {key: walk(value, inside) for key, value in node.items() if key != "$ref"}
            if name in inside or uses[name] > 1:  # itself, or shared: stays a reference
                kept.add(name)
                return {"$ref": ref, **rest}
            return {**walk(defs[name], (*inside, name)), **rest}
        lean: dict[str, Any] = {}
        for key, value in node.items():
            if key == "properties":  # property names, which may well be "title"
                lean[key] = {name: walk(sub, inside) for name, sub in value.items()}
            elif not _dropped(key, value, descriptions):
                lean[key] = walk(value, inside)
        return _nullable_as_type(lean)

    lean: dict[str, Any] = walk(schema, ())
    shared: dict[str, Any] = {}
    while kept - shared.keys():  # a kept model may keep others in turn
        name = min(kept - shared.keys())
        shared[name] = walk(defs[name], (name,))
    if shared:
        lean["$defs"] = dict(sorted(shared.items()))
    return lean


def _references(node: Any) -> Iterator[str]:
    """The name of each `$defs` model at each place it is referenced, `$defs` included."""
    if isinstance(node, list):
        for item in node:
            yield from _references(item)
    elif isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            yield ref.removeprefix("#/$defs/")
        for value in node.values():
            yield from _references(value)


def _dropped(key: str, value: Any, descriptions: bool) -> bool:
    if key in ("$defs", "title"):
        return True
    if key == "default":
        return value is None
    return key == "description" and not descriptions and isinstance(value, str)


_NULL_REJECTING = {"enum", "const", "anyOf", "oneOf", "allOf", "not", "$ref"}


def _nullable_as_type(node: dict[str, Any]) -> dict[str, Any]:
    options = node.get("anyOf")
    if not (isinstance(options, list) and len(options) == 2 and {"type": "null"} in options):
        return node
    other = options[0] if options[1] == {"type": "null"} else options[1]
    # Keywords for one type ignore the others (null passes `minimum`); these would reject it.
    if not isinstance(other.get("type"), str) or _NULL_REJECTING & other.keys():
        return node
    rest = {key: value for key, value in node.items() if key != "anyOf"}
    return {**other, **rest, "type": [other["type"], "null"]}


class Metadata(WireModel):
    execution_time: float = Field(description="Time spent answering, in milliseconds")
    cache_hit: bool = Field(description="True when the answer came from the shadow cache")
    warnings: list[str] | None = Field(
        default=None,
        description="What to know about a write that was made (the cache catching up, a "
        "deadline passed while it was finished); absent when there is nothing",
    )

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class Envelope(WireModel, Generic[D]):
    """Every tool answers `{success, data, metadata}`, or `{success: false, error, metadata}`."""

    success: bool
    data: D | None = None
    error: str | None = None
    metadata: Metadata


class FileInfo(WireModel):
    path: str = Field(description="Vault-relative path, '/'-separated")
    title: str
    type: str | None = Field(description="`type` from the frontmatter")
    status: str | None = Field(description="`status` from the frontmatter")
    frontmatter: dict[str, Any] | None
    tags: list[str] = Field(description="Frontmatter and inline tags, without '#'")
    created: int = Field(description="Unix epoch milliseconds")
    modified: int = Field(description="Unix epoch milliseconds")
    size: int = Field(description="File size in bytes")


class QueryFilesData(WireModel):
    files: list[FileInfo]
    total: int = Field(description="Notes matching the filters, over all pages")
    limit: int = Field(description="The limit applied (after clamping)")
    offset: int = Field(description="The offset applied (after clamping)")
    has_more: bool = Field(description="True when another page follows")


class FileLinks(WireModel):
    outgoing: list[str] = Field(
        description="Distinct link targets in order of appearance: the resolved path, or the "
        "raw target text when the link is broken"
    )
    incoming: list[str] = Field(description="Paths of the notes linking here (backlinks)")
    broken: list[str] = Field(description="The listed outgoing targets that resolve to no file")
    outgoing_total: int = Field(description="Distinct outgoing targets, listed or not")
    incoming_total: int = Field(description="Distinct notes linking here, listed or not")
    broken_total: int = Field(description="Distinct outgoing targets resolving to no file")
    hint: str | None = Field(
        default=None, description="How to get the links left out, when `linksLimit` cut any"
    )


class InlineFieldData(WireModel):
    key: str = Field(description="As written (`where=` compares keys case-folded)")
    value: str
    line: int = Field(description="1-based line in the note")


class FileData(FileInfo):
    heading: str | None = Field(
        default=None,
        description="The note's first H1 as text (the title is the frontmatter "
        "title, else the file name, as Obsidian shows it)",
    )
    aliases: list[str]
    links: FileLinks
    error: str | None = Field(
        default=None,
        description="Why the note was indexed without (some of) its metadata: a frontmatter "
        "that does not parse, text that is not UTF-8, a file too large",
    )
    content_hash: str = Field(
        description="sha256 of the note's bytes when last indexed: update_file's expectedHash"
    )
    inline_fields: list[InlineFieldData] = Field(
        default_factory=list,
        description="Dataview inline fields (`key:: value`), in file order, the first "
        f"{INLINE_FIELDS_SHOWN}; the frontmatter wins a clash of keys in `where=`",
    )
    inline_fields_total: int = Field(default=0, description="Inline fields, listed or not")


class FileContentData(WireModel):
    path: str
    content: str = Field(description="The markdown text, frontmatter included (or one page)")
    size: int = Field(description="File size in bytes")
    encoding: Literal["utf-8"] = "utf-8"
    offset: int = Field(description="Characters of the note before `content`")
    total_length: int = Field(description="The whole note's length in characters")
    truncated: bool = Field(description="True when more of the note follows `content`")
    next_offset: int | None = Field(description="The `offset` that reads on, if truncated")
    section: str | None = Field(
        default=None, description="The section read (offsets are within it), if one was asked"
    )


class TaggedFile(WireModel):
    path: str
    title: str
    type: str | None
    status: str | None
    frontmatter: dict[str, Any] | None
    tags: list[str]
    modified: int = Field(description="Unix epoch milliseconds")


class SearchTagsData(WireModel):
    tag: str = Field(description="The tag searched for, normalised (lower case, no '#')")
    files: list[TaggedFile]
    count: int = Field(description="Notes carrying a matching tag, even beyond `limit`")
    limit: int
    offset: int = 0
    has_more: bool
    matched_tags: list[str] = Field(description="The distinct tags that matched")
    hint: str | None = Field(
        default=None, description="When no note matched: the tags it probably meant"
    )


class LinkCounts(WireModel):
    outgoing: int
    incoming: int
    total: int


class BacklinkLine(WireModel):
    line: int = Field(description="1-based line of the linking note")
    text: str = Field(description="That line, trimmed; a long one cut around the link with …")


class BacklinkContext(WireModel):
    path: str = Field(description="The linking note")
    lines: list[BacklinkLine] = Field(description="Up to 3 lines where it links here")


class SearchLinksData(WireModel):
    path: str
    direction: Literal["outgoing", "incoming", "both"]
    outgoing: list[str] = Field(
        description="Distinct targets, sorted: resolved paths, or raw text for broken links"
    )
    incoming: list[str] = Field(description="Distinct notes linking here, sorted")
    broken: list[str] = Field(description="The listed outgoing targets that resolve to no file")
    count: LinkCounts = Field(description="Totals for the requested direction(s), before `limit`")
    limit: int = Field(default=100, description="Most targets and backlinks listed, each side")
    offset: int = Field(default=0, description="Entries of each side skipped")
    has_more: bool = Field(default=False, description="True when either side goes on")
    context: list[BacklinkContext] | None = Field(
        default=None,
        description="With `context`: for each listed backlink, the lines linking here",
    )


class TagCountInfo(WireModel):
    tag: str
    count: int


class StatsData(WireModel):
    total_files: int = Field(description="Markdown notes")
    total_attachments: int = Field(description="Other files (images, PDFs) links can point to")
    files_with_errors: int = Field(description="Notes indexed with a parse, decode or size error")
    total_tags: int = Field(description="Distinct tags")
    total_links: int = Field(description="Link occurrences, embeds included")
    broken_links: int = Field(description="Link occurrences that resolve to no file")
    files_by_type: dict[str, int]
    files_by_status: dict[str, int]
    top_tags: list[TagCountInfo] = Field(description="The 10 most used tags")
    vault_size: int = Field(description="Bytes of all notes and attachments")
    last_updated: int | None = Field(description="When the cache last changed, epoch ms")
    embedding: str = Field(
        default="", description="Semantic search progress: 'embedded N of M notes'"
    )


class Components(WireModel):
    shadow_cache: bool
    workflow_engine: bool
    file_system: bool


class HealthData(WireModel):
    status: Literal["healthy", "starting", "degraded", "unhealthy"]
    components: Components
    uptime: int = Field(description="Milliseconds since the server started")
    request_count: int = Field(description="Tool calls handled since start")
    version: str
    role: Literal["writer", "reader", "unwatched"] = Field(
        description="writer: this server keeps the cache fresh; reader: another process does; "
        "unwatched: started with --no-watch"
    )
    problems: list[str] = Field(description="Why the status is not healthy")
    embedding: str = Field(
        default="", description="Semantic search progress: 'embedded N of M notes'"
    )
