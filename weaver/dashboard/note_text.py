"""A note's text as its page shows it: the body as markdown, its `[[links]]` and `![[embeds]]`
made links, and the frontmatter's values for the properties table.

Each link goes where the cache resolved it (`cache.link_ends`): a note's link to that note's
page, an attachment's to the file in Obsidian (`obsidian://`; the dashboard serves no vault
files), a broken one shown as text in Obsidian's unresolved style. A `[[link]]` the index did not
see as one (inside a `%%` comment) stays text.

No way to run script: markdown-it runs with raw HTML off (a `<script>` in a note comes out as
text) and its link check drops `javascript:`, `vbscript:`, `file:` and `data:` URLs; the links
made here are built from escaped text and percent-quoted paths. The Content-Security-Policy
(see `security`) forbids inline script besides.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import OptionsDict
from markupsafe import Markup, escape

from weaver.cache.link_ends import LinkEnd
from weaver.markdown.patterns import SCHEME, WIKILINK, split_subpath, split_wikilink

MAX_PROPERTY_DEPTH = 6  # deeper frontmatter values are shown as JSON text


@dataclass(frozen=True, slots=True)
class NoteLinks:
    """What a note's links are rendered with: where each target leads, as the cache knows."""

    source: str  # the note's vault path (a `[[#Heading]]` leads to it)
    vault_name: str  # the vault's folder name, as Obsidian names the vault
    ends: Mapping[str, LinkEnd] = field(default_factory=dict)


NO_LINKS = NoteLinks("", "")


def render_markdown(text: str, links: NoteLinks = NO_LINKS) -> Markup:
    """Safe HTML for a note's body (markdown-it escapes what it does not turn into markup)."""
    # Markup: markdown-it with html disabled escapes every character of the note it keeps.
    return Markup(_MARKDOWN.render(text, {"links": links}))


def render_property(value: Any, links: NoteLinks, depth: int = 0) -> Markup:
    """A frontmatter value as the properties table shows it: lists as lists, objects as
    tables, text with its `[[links]]` as links, dates and numbers as written."""
    if depth > MAX_PROPERTY_DEPTH:
        return escape(json.dumps(value, ensure_ascii=False))
    if value is None:
        return Markup("")
    if isinstance(value, bool):
        return Markup("true" if value else "false")
    if isinstance(value, list):
        items = Markup("").join(_item(v, links, depth) for v in value)
        return Markup('<ul class="property-list">{}</ul>').format(items)
    if isinstance(value, dict):
        rows = Markup("").join(_row(k, v, links, depth) for k, v in value.items())
        return Markup('<table class="kv">{}</table>').format(rows)
    return _text_with_links(str(value), links)


def _item(value: Any, links: NoteLinks, depth: int) -> Markup:
    return Markup("<li>{}</li>").format(render_property(value, links, depth + 1))


def _row(key: str, value: Any, links: NoteLinks, depth: int) -> Markup:
    shown = render_property(value, links, depth + 1)
    return Markup("<tr><th>{}</th><td>{}</td></tr>").format(key, shown)


def _text_with_links(text: str, links: NoteLinks) -> Markup:
    parts: list[Markup] = []
    done = 0
    for match in WIKILINK.finditer(text):
        embed = match.start() > 0 and text[match.start() - 1] == "!"
        parts.append(escape(text[done : match.start() - embed]))
        parts.append(wikilink_html(match.group(1), embed, links))
        done = match.end()
    parts.append(escape(text[done:]))
    return Markup("").join(parts)


# ---------------------------------------------------------------- one link


def wikilink_html(content: str, embed: bool, links: NoteLinks) -> Markup:
    """The link that `[[content]]` (or `![[content]]`) makes on the page."""
    written = escape(("![[" if embed else "[[") + content + "]]")
    parts = split_wikilink(content)
    if parts is None:
        return written
    target, alias, subpath, _ = parts
    end = links.ends.get(target)
    if end is None:  # not a link to the index (in a comment): as written
        return written
    # An embed's "|..." is its size or caption, not the text Obsidian shows for it.
    text = (None if embed else alias) or _default_text(target, subpath)
    kind = "internal-link internal-embed" if embed else "internal-link"
    if end.path is None:
        title = f"No file {target!r} in the vault"
        return Markup('<span class="{} is-unresolved" title="{}">{}</span>').format(
            kind, title, text
        )
    href = page_href(end, links)
    return Markup('<a class="{}" href="{}" title="{}">{}</a>').format(kind, href, end.path, text)


def _default_text(target: str, subpath: str | None) -> str:
    """As Obsidian shows `[[Note#A#B]]`: "Note > A > B"; `[[#A]]` is "A"."""
    steps = [target] if target else []
    steps += [part for part in (subpath or "").split("#") if part]
    return " > ".join(steps) or target


def page_href(end: LinkEnd, links: NoteLinks) -> str:
    """A note's page on the dashboard, or an attachment opened in Obsidian."""
    assert end.path is not None
    if end.note:
        return "/notes/" + quote(end.path, safe="/")
    vault, path = quote(links.vault_name, safe=""), quote(end.path, safe="")
    return f"obsidian://open?vault={vault}&file={path}"


# ---------------------------------------------------------------- markdown-it


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    """`[[...]]` and `![[...]]` as one token, before markdown-it reads `[` as a link."""
    start = state.pos
    embed = state.src.startswith("![[", start)
    if not embed and not state.src.startswith("[[", start):
        return False
    match = WIKILINK.match(state.src, start + embed)
    if match is None:
        return False
    if not silent:
        token = state.push("wikilink", "", 0)
        token.content = match.group(1)
        token.meta = {"embed": embed}
    state.pos = match.end()
    return True


def _render_wikilink(
    renderer: RendererHTML,
    tokens: Sequence[Token],
    idx: int,
    options: OptionsDict,
    env: MutableMapping[str, Any],
) -> str:
    token = tokens[idx]
    return str(wikilink_html(token.content, bool(token.meta["embed"]), env["links"]))


def _render_link_open(
    renderer: RendererHTML,
    tokens: Sequence[Token],
    idx: int,
    options: OptionsDict,
    env: MutableMapping[str, Any],
) -> str:
    """A markdown link to a note (`[text](Other.md)`) leads where the cache resolved it."""
    token = tokens[idx]
    href = str(token.attrGet("href") or "")
    if href and not href.startswith("#") and not SCHEME.match(href):
        target, _ = split_subpath(unquote(href))
        end = env["links"].ends.get(target)
        if end is not None and end.path is not None:
            token.attrSet("href", page_href(end, env["links"]))
            token.attrSet("class", "internal-link")
        elif end is not None:  # broken: no page to go to
            token.attrs.pop("href", None)
            token.attrSet("class", "internal-link is-unresolved")
    return renderer.renderToken(tokens, idx, options, env)


def _build_markdown() -> MarkdownIt:
    # html: False is the point; linkify needs an extra package, and typographer changes the text.
    md = MarkdownIt("commonmark", {"html": False}).enable("table").enable("strikethrough")
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)
    md.add_render_rule("wikilink", _render_wikilink)
    md.add_render_rule("link_open", _render_link_open)
    return md


_MARKDOWN = _build_markdown()
