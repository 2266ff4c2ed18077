"""The dashboard's audit page over real HTTP: every write by Weaver, newest first, naming the
client, the tool, the note (linked) and the edit; filtered by client, note and age as `weaver
audit` is; paged; a filter it cannot read said beside the form; client names escaped. Rows are
recorded as the edits core records them (`cache.audit_log.record_run`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.dashboard.server import Served, serve_dashboard
from tests.helpers import write_files
from weaver.cache import audit_log, journal
from weaver.edits.attribution import Actor

DAY_MS = 86_400_000
PHONE = Actor("oauth", "c-123", "Phone assistant", "edit_file")
SNEAKY = Actor("oauth", "c-666", "<script>window.__pwned = 1</script>", "delete_file")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = write_files(tmp_path_factory.mktemp("audit") / "vault", {"Home.md": "# Home\n"})
    with serve_dashboard(root) as server:
        now = journal.now_ms()
        with server.app.db.begin() as conn:
            audit_log.record_run(conn, 1, SNEAKY, ["Old.md"], now - 10 * DAY_MS)
            for n in range(60):  # more than a page
                audit_log.record_run(conn, 100 + n, PHONE, [f"Projects/n{n}.md"], now - n)
            audit_log.record_run(
                conn, 7, Actor("cli", "cli", "cli", "weaver undo"), ["Home.md"], now
            )
        yield server


def rows(body: str) -> list[str]:
    table = body.partition("<tbody>")[2].partition("</tbody>")[0]
    return re.findall(r"<tr>(.*?)</tr>", table, re.S)


def test_every_write_newest_first_with_its_client_tool_and_note(served: Served) -> None:
    reply = served.get("/audit")
    assert reply.status == 200
    assert '<a href="/audit" class="current">Audit</a>' in reply.body
    assert '<p id="audit-total">62 writes · 1–50</p>' in reply.body
    first = rows(reply.body)[0]
    assert "weaver undo" in first and 'href="/notes/Home.md"' in first and ">7<" in first
    assert "Phone assistant" in rows(reply.body)[1] and "oauth" in rows(reply.body)[1]
    assert 'id="next-page" href="/audit?offset=50"' in reply.body


def test_the_second_page_holds_the_rest(served: Served) -> None:
    reply = served.get("/audit?offset=50")
    assert len(rows(reply.body)) == 12
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in reply.body
    assert "<script>window.__pwned" not in reply.body
    assert (
        'id="next-page"' not in reply.body and 'id="prev-page" href="/audit?offset=0"' in reply.body
    )


def test_filters_by_client_note_and_age(served: Served) -> None:
    by_client = served.get("/audit?client=c-123")
    assert '<p id="audit-total">60 writes' in by_client.body
    assert 'value="c-123"' in by_client.body  # the form keeps what was asked
    assert 'href="/audit?client=c-123&amp;offset=50"' in by_client.body
    by_note = served.get("/audit?note=Projects/n3.md")
    assert len(rows(by_note.body)) == 1 and "Projects/n3.md" in by_note.body
    recent = served.get("/audit?since=1d")
    assert '<p id="audit-total">61 writes' in recent.body


def test_a_filter_it_cannot_read_is_said_beside_the_form(served: Served) -> None:
    reply = served.get("/audit?since=whenever")
    assert reply.status == 200
    assert '<p class="error" id="audit-error">' in reply.body
    assert "since: cannot read &#39;whenever&#39;" in reply.body
