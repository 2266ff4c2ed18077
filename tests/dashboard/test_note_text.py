"""A note's page text: `[[links]]` and `![[embeds]]` lead where the cache resolved them (a
note's page, an attachment in Obsidian, nothing for a broken one, shown unresolved), the
frontmatter becomes properties (lists as lists, links as links, dates as written), and
nothing a hostile note holds becomes markup."""

from __future__ import annotations

from html.parser import HTMLParser

from weaver.cache.link_ends import LinkEnd
from weaver.dashboard.note_text import NoteLinks, render_markdown, render_property
from weaver.markdown.frontmatter import read_frontmatter

LINKS = NoteLinks(
    "notes/Home.md",
    "My Vault",
    {
        "Topic": LinkEnd("notes/Topic.md", note=True),
        "Missing": LinkEnd(None, note=False),
        "pic.png": LinkEnd("img/a pic.png", note=False),
        "": LinkEnd("notes/Home.md", note=True),
        "../other/Home.md": LinkEnd("other/Home.md", note=True),
    },
)


class Elements(HTMLParser):
    """Every element of a fragment: (tag, attributes, the text directly in it)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None], str]] = []
        self.open: list[int] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs), ""))
        self.open.append(len(self.found) - 1)

    def handle_endtag(self, tag: str) -> None:
        if self.open:
            self.open.pop()

    def handle_data(self, data: str) -> None:
        if self.open:
            tag, attrs, text = self.found[self.open[-1]]
            self.found[self.open[-1]] = (tag, attrs, text + data)

    def links(self) -> list[tuple[str, str | None, str]]:
        """(class, href, text) of each <a> and <span class=internal-link>."""
        return [
            (attrs.get("class") or "", attrs.get("href"), text)
            for tag, attrs, text in self.found
            if tag == "a" or "internal-link" in (attrs.get("class") or "")
        ]


def links_in(markdown: str) -> list[tuple[str, str | None, str]]:
    return Elements(str(render_markdown(markdown, LINKS))).links()


def test_wikilinks_lead_to_their_notes_pages() -> None:
    assert links_in("See [[Topic]], [[Topic|the topic]] and [[Topic#Part#Detail]].") == [
        ("internal-link", "/notes/notes/Topic.md", "Topic"),
        ("internal-link", "/notes/notes/Topic.md", "the topic"),
        ("internal-link", "/notes/notes/Topic.md", "Topic > Part > Detail"),
    ]
    assert links_in("Up to [[#Top]].") == [("internal-link", "/notes/notes/Home.md", "Top")]


def test_an_unresolved_link_is_shown_as_such_with_nowhere_to_go() -> None:
    html = str(render_markdown("Wanted: [[Missing]].", LINKS))
    assert links_in("Wanted: [[Missing]].") == [
        ("internal-link is-unresolved", None, "Missing"),
    ]
    assert "<a" not in html


def test_embeds_link_to_their_note_or_attachment() -> None:
    assert links_in("![[Topic]]\n\n![[pic.png|120]]") == [
        ("internal-link internal-embed", "/notes/notes/Topic.md", "Topic"),
        (
            "internal-link internal-embed",
            "obsidian://open?vault=My%20Vault&file=img%2Fa%20pic.png",
            "pic.png",  # "|120" is the embed's size, not its text
        ),
    ]


def test_links_in_code_or_unknown_to_the_index_stay_text() -> None:
    html = str(render_markdown("`[[Topic]]` and %%[[Elsewhere]]%%\n\n```\n[[Topic]]\n```", LINKS))
    assert "<a" not in html
    assert "<code>[[Topic]]</code>" in html
    assert "%%[[Elsewhere]]%%" in html


def test_markdown_links_to_notes_lead_where_the_cache_resolved_them() -> None:
    assert links_in("[home](../other/Home.md) [gone](Missing) [web](https://example.org)") == [
        ("internal-link", "/notes/other/Home.md", "home"),
        ("internal-link is-unresolved", None, "gone"),
        ("", "https://example.org", "web"),
    ]


def test_the_frontmatter_becomes_properties() -> None:
    frontmatter = read_frontmatter(
        "notes/Home.md",
        "---\ncreated: 2024-01-05\nupdated: 2024-1-5 10:00\nscore: 3.50\ndone: true\n"
        "related:\n  - '[[Topic]]'\n  - '[[Missing|not yet]]'\n  - plain\n"
        "cover: '![[pic.png]]'\nempty:\nnested: {a: [1, 2]}\n---\nbody\n",
    ).data
    shown = {key: str(render_property(value, LINKS)) for key, value in frontmatter.items()}
    assert shown["created"] == "2024-01-05"  # as written, not a date turned back into text
    assert shown["updated"] == "2024-1-5 10:00"
    assert shown["score"] == "3.5"
    assert shown["done"] == "true"
    assert shown["empty"] == ""
    related = Elements(shown["related"])
    assert [tag for tag, _, _ in related.found] == ["ul", "li", "a", "li", "span", "li"]
    assert related.links() == [
        ("internal-link", "/notes/notes/Topic.md", "Topic"),
        ("internal-link is-unresolved", None, "not yet"),
    ]
    assert "<li>plain</li>" in shown["related"]
    assert Elements(shown["cover"]).links()[0][1] == (
        "obsidian://open?vault=My%20Vault&file=img%2Fa%20pic.png"
    )
    assert shown["nested"] == (
        '<table class="kv"><tr><th>a</th><td>'
        '<ul class="property-list"><li>1</li><li>2</li></ul></td></tr></table>'
    )


def test_a_deeply_nested_value_is_shown_as_json_text() -> None:
    value: object = "[[Topic]]"
    for _ in range(20):
        value = [value]
    html = str(render_property(value, LINKS))
    assert html.count("<ul") == 7
    assert "[[[&#34;[[Topic]]&#34;]]]" in html  # below the depth bound: text, not a link


HOSTILE = "<script>window.__pwned=1</script>"
HOSTILE_ENDS = NoteLinks(
    "h.md",
    'V"><script>x</script>',
    {
        HOSTILE: LinkEnd('a"><img src=x onerror=alert(1)>.md', note=True),
        "file": LinkEnd("x'><svg onload=alert(1)>.png", note=False),
        "Missing": LinkEnd(None, note=False),
    },
)


def test_nothing_a_hostile_note_holds_becomes_markup() -> None:
    body = (
        f"[[Missing|{HOSTILE}]] [[{HOSTILE}]] [[{HOSTILE}|<img src=x onerror=alert(2)>]] "
        f"![[file|{HOSTILE}]] [x]({HOSTILE})\n"
    )
    properties = {
        f"key {HOSTILE}": [f"[[Missing|{HOSTILE}]]", HOSTILE, {HOSTILE: f"[[{HOSTILE}]]"}],
    }
    for html in (
        str(render_markdown(body, HOSTILE_ENDS)),
        str(render_property(properties, HOSTILE_ENDS)),
    ):
        elements = Elements(html)
        tags = {tag for tag, _, _ in elements.found}
        assert tags <= {"p", "a", "span", "ul", "li", "table", "tr", "th", "td"}, html
        attributes = {name for _, attrs, _ in elements.found for name in attrs}
        assert attributes <= {"class", "href", "title"}, html
        hrefs = [href for _, href, _ in elements.links() if href]
        assert all(href.startswith(("/notes/", "obsidian://open?")) for href in hrefs)
        assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
