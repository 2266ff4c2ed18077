"""Rewrite a note's links after another note moved, the way Obsidian does. Pure: text in, text out.

`rewrite_links` finds every link of a note as the parser finds them (so links in code,
comments and math are left alone, exactly as the indexer ignores them), resolves each one as it
resolved before the move and as it would after, and rewrites only those whose target would
change: links to the moved note now name its new path, and any other link the move would divert
(the moved note's own relative links, a same-named note now closer) keeps its old target. A
rewritten link keeps everything but its target: `!`, `rel::`, `#heading`, `#^block`, `|alias`,
`<...>` or percent-encoding, `.md` or not, and relative `./`/`../` style when it had it.
Otherwise the new target is the shortest that resolves, as Obsidian's default "shortest path
when possible" writes it: the file name when that finds the note, else its full vault path.

Code, comments and math are masked, and links found, with the parser's own patterns
(`weaver.markdown.patterns`): the rewrite must skip exactly what the parse that filled the cache
skipped, and read each link as it read it.
"""

from __future__ import annotations

import posixpath
import re
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote, unquote

from weaver.markdown.frontmatter import ObsidianYAMLHandler
from weaver.markdown.patterns import (
    FILL,
    MD_LINK,
    MD_SUFFIX,
    SCHEME,
    TYPED_LINK,
    WIKILINK,
    fill,
    mask_code,
)
from weaver.markdown.resolver import LinkResolver

_YAML = ObsidianYAMLHandler()


@dataclass(frozen=True, slots=True)
class Move:
    """A note moving from `old` to `new`, with the vault's resolvers before and after."""

    old: str
    new: str
    before: LinkResolver
    after: LinkResolver


@dataclass(frozen=True, slots=True)
class _Span:
    start: int  # the target's place in the text (for markdown links: the raw path part)
    end: int
    target: str  # as the parser reads it (markdown: percent-decoded, without #subpath)
    markdown: bool
    angle: bool  # markdown destination written <like this>


def rewrite_links(text: str, source: str, move: Move) -> tuple[str, int]:
    """`text` of the note at `source` (its path before the move) with its links fixed, and how
    many links changed. `source` may be the moved note itself."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    text = text.removeprefix("\ufeff")
    new_source = move.new if source == move.old else source
    edits: list[tuple[int, int, str]] = []
    for span in _spans(text):
        if span.target == "":
            continue  # [[#Heading]]: the note itself, wherever it lives
        was = move.before.resolve(span.target, source)
        if was is None:
            continue  # broken before: not ours to fix (a new file may well resolve it)
        wanted = move.new if was == move.old else was
        if move.after.resolve(span.target, new_source) == wanted:
            continue
        replacement = _new_target(span, wanted, new_source, move.after)
        edits.append((span.start, span.end, replacement))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return bom + text, len(edits)


# ---------------------------------------------------------------- finding links


def _spans(text: str) -> Iterator[_Span]:
    body_start = 0
    if _YAML.detect(text):
        body_start = len(text) - len(_YAML.split(text)[1])
        # A link in a YAML string; one inside a YAML comment is rewritten too, harmlessly.
        for match in WIKILINK.finditer(text, 0, body_start):
            found = _wikilink_target(text, match)
            if found is not None:
                yield found
    yield from _body_spans(text, body_start)


def _body_spans(text: str, body_start: int) -> Iterator[_Span]:
    body = text[body_start:]
    scan = body.replace("\r\n", "\n")  # the parser scans this; map offsets back to `text`
    newlines = [m.start() - i for i, m in enumerate(re.finditer("\r\n", body))]

    def place(pos: int) -> int:
        return body_start + pos + bisect_left(newlines, pos)

    masked = mask_code(scan)
    wikilinks = list(WIKILINK.finditer(masked))
    for match in wikilinks:
        found = _wikilink_target(scan, match)
        if found is not None:
            yield _Span(place(found.start), place(found.end), found.target, False, False)
    # A markdown link inside a wikilink is not one (wikilinks never span lines).
    wikiless = fill(masked, ((match.start(), match.end(), FILL) for match in wikilinks))
    for match in MD_LINK.finditer(wikiless):
        angle = match.group(2) is not None
        start, end = match.span(2) if angle else match.span(3)
        destination = scan[start:end]
        if not destination or SCHEME.match(destination):
            continue
        raw_hash = destination.find("#")
        path_end = start + raw_hash if raw_hash >= 0 else end
        target = unquote(destination).partition("#")[0].strip()
        yield _Span(place(start), place(path_end), target, True, angle)


def _wikilink_target(text: str, match: re.Match[str]) -> _Span | None:
    """Where the target sits in `[[rel::target#sub|alias]]`, split as the parser splits it."""
    offset, content = match.start(1), match.group(1)
    if not content.strip():
        return None
    if typed := TYPED_LINK.fullmatch(content):
        offset, content = offset + typed.start(2), typed.group(2)
    bar = content.find("|", 1)
    left = content[:bar].removesuffix("\\") if bar > 0 else content
    target = left.partition("#")[0]
    lead = len(target) - len(target.lstrip())
    start, end = offset + lead, offset + len(target.rstrip())
    return _Span(start, end, text[start:end], False, False)


# ---------------------------------------------------------------- writing targets


def _new_target(span: _Span, wanted: str, source: str, after: LinkResolver) -> str:
    # `[[Note]]` stays without `.md` and `[t](Note.md)` with it, as each was written.
    text = _shortest(span, wanted, source, after, keep_md=bool(MD_SUFFIX.search(span.target)))
    if not span.markdown or span.angle:
        return text
    return quote(text, safe="/")  # `My Note.md` -> `My%20Note.md`, as Obsidian writes it


def _shortest(span: _Span, wanted: str, source: str, after: LinkResolver, keep_md: bool) -> str:
    def spelled(path: str) -> str:
        return path if keep_md else MD_SUFFIX.sub("", path)

    candidates: list[str] = []
    if span.target.startswith(("./", "../")):
        relative = posixpath.relpath(wanted, posixpath.dirname(source) or ".")
        candidates.append(spelled(relative if relative.startswith("../") else "./" + relative))
    candidates += [spelled(wanted.rsplit("/", 1)[-1]), spelled(wanted), wanted]
    for candidate in candidates:
        if after.resolve(candidate, source) == wanted:
            return candidate
    return wanted
