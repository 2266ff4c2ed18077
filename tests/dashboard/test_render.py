"""Notes become HTML with no way to run script; times and durations read well."""

from __future__ import annotations

from weaver.dashboard.note_text import render_markdown
from weaver.dashboard.render import format_duration, format_ms
from weaver.dashboard.security import safe_next


def test_markdown_keeps_formatting_and_drops_raw_html() -> None:
    html = str(
        render_markdown(
            "# Title\n\n**bold** <script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n"
            "[a](javascript:alert(1)) [b](https://example.org) ![c](data:text/html,x)"
        )
    )
    assert "<h1>Title</h1>" in html
    assert "<strong>bold</strong>" in html
    assert "<script" not in html
    assert "&lt;script&gt;" in html
    assert "<img src=x" not in html
    assert 'href="javascript:' not in html
    assert 'href="https://example.org"' in html
    assert 'src="data:' not in html


def test_times_and_durations() -> None:
    assert format_ms(None) == "—"
    assert format_ms(0) == "1970-01-01 00:00:00"
    assert [format_duration(v) for v in (None, 12, 1500, 120_000)] == [
        "—",
        "12 ms",
        "1.5 s",
        "2.0 min",
    ]


def test_login_only_returns_to_a_path_on_this_site() -> None:
    assert safe_next("/runs?status=failed") == "/runs?status=failed"
    for bad in (None, "", "https://evil.example", "//evil.example", "/\\evil.example", "runs"):
        assert safe_next(bad) == "/"
