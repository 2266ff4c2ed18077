"""The dashboard over real HTTP: every page answers, and the security rules hold (Host and
Origin on loopback, the login cookie, CSRF on every POST, read_only, hostile notes escaped)."""

from __future__ import annotations

import http.client
import json
import re
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.dashboard.server import HOSTILE_NOTES, Served, request, serve_dashboard
from tests.helpers import wait_for, write_files
from weaver.dashboard.data import DAY_MS, RunFilters
from weaver.dashboard.security import CSRF_COOKIE, SESSION_COOKIE, session_value
from weaver.edits import patches
from weaver.edits.audit import read_audit
from weaver.runtime import cache_sync

DEMO = Path(__file__).resolve().parents[2] / "demo-vault"
TOKEN = "s3cret-token-for-tests"
PUBLIC = "https://vault.example.com"  # a TLS proxy's address in front of the loopback daemon


def demo_copy(root: Path) -> Path:
    vault = root / "vault"
    shutil.copytree(DEMO, vault, ignore=shutil.ignore_patterns(".weaver"))
    write_files(vault, HOSTILE_NOTES)
    return vault


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serve_dashboard(demo_copy(tmp_path_factory.mktemp("demo"))) as server:
        yield server


def csrf_of(served: Served, path: str = "/workflows/test-slow-echo") -> tuple[str, str]:
    """A page's CSRF cookie and the token its forms carry."""
    reply = served.get(path)
    cookie = next(c for c in reply.header("set-cookie") if c.startswith(CSRF_COOKIE))
    value = cookie.split(";")[0].split("=", 1)[1]
    form = re.search(r'name="csrf" value="([^"]+)"', reply.body)
    assert form is not None
    return value, form.group(1)


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/runs",
        "/runs?status=failed&period=24h&workflow=test-slow-echo&page=3",
        "/workflows",
        "/workflows/test-slow-echo",
        "/vault",
        "/search?q=project",
        "/tasks",
        "/notes/Welcome.md",
        "/graph",
        "/graph?note=Welcome.md&depth=2",
    ],
)
def test_every_page_answers(served: Served, path: str) -> None:
    reply = served.get(path)
    assert reply.status == 200, reply.body[:500]
    assert "<h1" in reply.body


def test_missing_things_are_named_with_404(served: Served) -> None:
    for path, words in [
        ("/runs/wf_exec_nope", "Execution not found"),
        ("/notes/Nope.md", "File not found"),
        ("/workflows/nope", "Workflow not found"),
    ]:
        reply = served.get(path)
        assert reply.status == 404
        assert words in reply.body


def test_graph_data_comes_from_the_link_graph(served: Served) -> None:
    body = json.loads(served.get("/graph/data?note=Welcome.md&depth=1").body)
    nodes = [e["data"]["id"] for e in body["elements"] if "source" not in e["data"]]
    assert nodes[0] == "Welcome.md"
    assert len(nodes) > 1
    assert served.get("/graph/data?note=Nope.md").status == 404


def test_security_headers_forbid_inline_script_and_framing(served: Served) -> None:
    reply = served.get("/")
    policy = reply.header("content-security-policy")[0]
    assert "script-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    assert reply.header("x-frame-options") == ["DENY"]


def test_loopback_refuses_a_foreign_host_or_origin(served: Served) -> None:
    assert served.get("/", headers={"Host": "evil.example:8765"}).status == 421
    assert served.get("/", headers={"Origin": "http://evil.example"}).status == 403
    assert served.get("/", headers={"Host": "localhost:1"}).status == 200


def test_a_post_needs_the_csrf_token(served: Served) -> None:
    url = served.base + "/workflows/test-slow-echo/trigger"
    cookie, token = csrf_of(served)
    assert request(url, {"input": "{}"}).status == 403
    other = {"Cookie": f"{CSRF_COOKIE}={cookie}"}
    assert request(url, {"input": "{}", "csrf": "forged"}, headers=other).status == 403
    cross = other | {"Origin": "http://evil.example"}
    assert request(url, {"input": "{}", "csrf": token}, headers=cross).status == 403
    taken = request(url, {"input": '{"seconds": 0}', "csrf": token}, headers=other)
    assert taken.status == 303
    assert taken.header("location")[0].startswith("/runs/wf_exec_")


def test_trigger_input_is_validated_as_trigger_workflow_validates_it(served: Served) -> None:
    url = served.base + "/workflows/test-slow-echo/trigger"
    cookie, token = csrf_of(served)
    headers = {"Cookie": f"{CSRF_COOKIE}={cookie}"}
    bad = request(url, {"input": '{"seconds": 99}', "csrf": token}, headers=headers)
    assert bad.status == 400
    assert "Invalid input for &#39;test-slow-echo&#39;" in bad.body
    assert "seconds" in bad.body
    not_json = request(url, {"input": "{nope", "csrf": token}, headers=headers)
    assert not_json.status == 400
    assert "Input is not JSON" in not_json.body


def test_the_note_page_lists_weavers_edits_and_undoes_the_latest(served: Served) -> None:
    app = served.app
    path = "Projects.md"
    before = (app.vault.root / path).read_bytes()

    def sync(expected: Mapping[str, str | None]) -> bool:
        return cache_sync.sync_cache(app, expected, holds_writer=True)

    transform = patches.insert_transform("append", "added by an assistant")
    done = patches.patch_note(app, path, transform, expected_hash=None, sync=sync)
    page = served.get(f"/notes/{path}").body
    assert "Edits by Weaver (1)" in page and "edit_file" in page and "undo-button" in page
    edit_id = re.search(r'action="/edits/(\d+)/restore"', page)
    assert edit_id is not None
    cookie, token = csrf_of(served, f"/notes/{path}")
    headers = {"Cookie": f"{CSRF_COOKIE}={cookie}"}
    url = f"{served.base}/edits/{edit_id.group(1)}/restore"
    assert request(url, {"path": path}, headers=headers).status == 403  # no CSRF token
    assert done.changed and (app.vault.root / path).read_bytes() != before
    undone = request(url, {"path": path, "csrf": token}, headers=headers)
    assert undone.status == 303 and undone.header("location") == [f"/notes/{path}"]
    assert (app.vault.root / path).read_bytes() == before
    [audited] = read_audit(app.db, client="dashboard").items  # the undo names the dashboard
    assert (audited.tool, audited.path, audited.outcome) == ("restore_edit", path, "written")
    again = request(url, {"path": path, "csrf": token}, headers=headers)
    assert again.status == 400 and "has changed since edit" in again.body


def test_trigger_input_nested_too_deep_is_refused_not_a_500(served: Served) -> None:
    url = served.base + "/workflows/test-slow-echo/trigger"
    cookie, token = csrf_of(served)
    headers = {"Cookie": f"{CSRF_COOKIE}={cookie}"}
    deep = "[" * 100_000 + "]" * 100_000  # RecursionError in json.loads: a 500 before
    refused = request(url, {"input": deep, "csrf": token}, headers=headers)
    assert refused.status == 400
    assert "Input is not JSON: nested deeper than 512 levels" in refused.body


def test_cancel_a_pending_run_and_rerun_it(served: Served) -> None:
    engine = served.engine
    cookie, token = csrf_of(served)
    headers = {"Cookie": f"{CSRF_COOKIE}={cookie}"}
    started = engine.trigger("test-slow-echo", {"seconds": 2}, async_=True)
    cancel = request(
        f"{served.base}/runs/{started.execution_id}/cancel", {"csrf": token}, headers=headers
    )
    assert cancel.status == 303
    assert engine.get_status(started.execution_id).status == "cancelled"
    ended = request(
        f"{served.base}/runs/{started.execution_id}/cancel", {"csrf": token}, headers=headers
    )
    assert ended.status == 400
    assert "has already ended (cancelled)" in ended.body
    rerun = request(
        f"{served.base}/runs/{started.execution_id}/rerun", {"csrf": token}, headers=headers
    )
    new_id = rerun.header("location")[0].rsplit("/", 1)[1]
    assert new_id != started.execution_id
    wait_for(lambda: engine.get_status(new_id).status == "completed", 10, "the re-run to end")
    done = engine.get_status(new_id)
    assert done.input == {"text": "hello", "seconds": 2.0}


def test_hostile_note_text_is_escaped(served: Served) -> None:
    body = served.get("/notes/hostile/Script%20note.md").body
    assert "<script>window" not in body
    assert "&lt;script&gt;window.__pwned" in body
    assert "<img src=x" not in body
    assert "<iframe" not in body
    assert 'href="javascript:' not in body
    assert "<svg onload" not in body
    for page in ("/search?q=hostilemarker", "/vault"):
        text = served.get(page).body
        assert "<img src=x onerror" not in text
        assert "&lt;img src=x onerror=window.__pwned=1&gt;" in text


def test_a_note_page_shows_properties_and_links_to_notes(served: Served) -> None:
    welcome = served.get("/notes/Welcome.md").body
    assert "title: Welcome to the demo vault" not in welcome  # not rendered as text
    assert "<th>created</th><td>2025-02-24</td>" in welcome  # as written
    assert '<ul class="property-list"><li>meta</li><li>start-here</li></ul>' in welcome
    assert (
        '<a class="internal-link" href="/notes/concepts/index.md" title="concepts/index.md">'
        "the concept map</a>"
    ) in welcome
    assert '<a class="internal-link" href="/notes/projects/index.md"' in welcome  # own folder
    wikilinks = 'href="/notes/concepts/wikilinks.md" title="concepts/wikilinks.md">wikilinks &gt; '
    assert wikilinks + "Not links</a>" in welcome
    assert "<code>[[Missing Note]]</code>" in welcome  # code is not a link
    assert (
        '<a href="/notes/technical/databases/WAL%20Mode.md" class="internal-link">'
        "why WAL mode matters</a>"
    ) in welcome  # a markdown link to a note, to its page wherever the page is
    spec = served.get("/notes/specs/sync-conflicts.md").body
    assert (
        '<th>project</th><td><a class="internal-link" href="/notes/projects/loom-prototype.md"'
    ) in spec
    unresolved = '<span class="internal-link is-unresolved" title="No file &#39;Missing Note&#39; '
    assert unresolved + 'in the vault">Missing Note</span>' in spec
    loom = served.get("/notes/projects/loom-prototype.md").body
    assert (
        '<a class="internal-link internal-embed" href="/notes/concepts/shadow-cache.md" '
        'title="concepts/shadow-cache.md">shadow-cache &gt; Rules</a>'
    ) in loom


def test_hostile_links_and_properties_are_escaped(served: Served) -> None:
    body = served.get("/notes/hostile/Link%20note.md").body
    assert "<script>window" not in body
    assert "&lt;script&gt;window.__pwned = &#39;property alias&#39;&lt;/script&gt;</a>" in body
    assert "<img src=x" not in body and "<svg onload" not in body and "<b>bold" not in body
    assert '">&lt;img src=x onerror=&#34;window.__pwned = &#39;alias&#39;&#34;&gt;</a>' in body
    assert "&lt;b&gt;bold&lt;/b&gt;</span>" in body  # the unresolved link's alias, as text
    bad = served.get("/notes/hostile/Bad%20yaml.md").body
    assert "invalid YAML frontmatter" in bad
    assert "<script>window" not in bad
    assert "title: &lt;script&gt;window.__pwned = &#39;yaml&#39;&lt;/script&gt;" in bad


def test_events_stream_says_when_runs_move(served: Served) -> None:
    host, port = served.base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", "/events")
    response = conn.getresponse()
    assert response.getheader("content-type", "").startswith("text/event-stream")
    assert response.readline().startswith(b"retry:")
    served.engine.trigger("test-slow-echo", {"seconds": 0}, async_=True)
    lines = [response.readline() for _ in range(2)]
    while lines[-1] == b"\n":
        lines.append(response.readline())
    assert b"event: runs\n" in lines
    conn.close()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    vault = demo_copy(tmp_path_factory.mktemp("guarded"))
    with serve_dashboard(vault, http_token=TOKEN, read_only=True, public_url=PUBLIC) as server:
        yield server


def test_with_a_token_pages_need_the_login_cookie(guarded: Served) -> None:
    reply = guarded.get("/runs?status=failed")
    assert reply.status == 303
    assert reply.header("location") == ["/login?next=%2Fruns%3Fstatus%3Dfailed"]
    assert guarded.get("/static/dashboard.css").status == 200
    assert guarded.get("/health").status in (200, 503)  # open, as before
    forged = {"Cookie": f"{SESSION_COOKIE}={session_value('other-token')}"}
    assert guarded.get("/", headers=forged).status == 303


def test_login_sets_an_httponly_strict_cookie(guarded: Served) -> None:
    cookie, token = csrf_of(guarded, "/login")
    headers = {"Cookie": f"{CSRF_COOKIE}={cookie}"}
    url = guarded.base + "/login"
    wrong = request(url, {"token": "nope", "csrf": token, "next": "/runs"}, headers=headers)
    assert wrong.status == 401
    assert "Wrong token" in wrong.body
    right = request(url, {"token": TOKEN, "csrf": token, "next": "//evil.example"}, headers)
    assert right.status == 303
    assert right.header("location") == ["/"]  # never off the site
    (session,) = [c for c in right.header("set-cookie") if c.startswith(SESSION_COOKIE)]
    assert TOKEN not in session
    assert "HttpOnly" in session
    assert "SameSite=strict" in session or "SameSite=Strict" in session
    value = session.split(";")[0].split("=", 1)[1]
    assert guarded.get("/runs", headers={"Cookie": f"{SESSION_COOKIE}={value}"}).status == 200


def test_behind_a_proxy_the_login_accepts_the_public_urls_origin(guarded: Served) -> None:
    """Behind the proxy of docs/deployment.md the browser's Origin is `public_url`'s, while
    the Host reaching a loopback daemon is its own address: the login form must still work."""
    cookie, token = csrf_of(guarded, "/login")
    url = guarded.base + "/login"
    form = {"token": TOKEN, "csrf": token, "next": "/runs"}
    proxied = {"Cookie": f"{CSRF_COOKIE}={cookie}", "Origin": PUBLIC}
    logged = request(url, form, proxied)
    assert logged.status == 303, logged.body
    assert logged.header("location") == ["/runs"]
    other = proxied | {"Origin": "https://evil.example"}
    assert request(url, form, other).status == 403


def test_read_only_hides_and_refuses_the_actions(guarded: Served) -> None:
    session = {"Cookie": f"{SESSION_COOKIE}={session_value(TOKEN)}"}
    page = guarded.get("/workflows/test-slow-echo", headers=session).body
    assert 'id="trigger-button"' not in page
    assert "read_only is set" in page
    run = guarded.engine.trigger("test-slow-echo", {"seconds": 0})
    assert 'id="rerun-button"' not in guarded.get(f"/runs/{run.execution_id}", session).body
    login = guarded.get("/login")
    cookie = next(c for c in login.header("set-cookie") if c.startswith(CSRF_COOKIE))
    csrf = cookie.split(";")[0].split("=", 1)[1]
    headers = {"Cookie": f"{SESSION_COOKIE}={session_value(TOKEN)}; {CSRF_COOKIE}={csrf}"}
    refused = request(
        guarded.base + "/workflows/test-slow-echo/trigger", {"csrf": csrf}, headers=headers
    )
    assert refused.status == 403
    assert "read_only is set" in refused.body


def test_vault_health_follows_the_cache(served: Served) -> None:
    assert "Brand new target" not in served.get("/vault").body  # kept for this cache version
    vault = served.app.vault.root
    (vault / "Fresh note.md").write_text("Points at [[Brand new target]].\n", encoding="utf-8")
    wait_for(lambda: "Brand new target" in served.get("/vault").body, 10, "the new broken link")


def test_runs_filter_by_a_range_of_days(served: Served) -> None:
    filters = RunFilters.parse({"start": "2026-01-02", "end": "2026-01-03", "period": "7d"})
    start = 1767312000000  # 2026-01-02T00:00Z
    assert filters.window(start + 3 * DAY_MS) == (start, start + 2 * DAY_MS)
    assert filters.window(start + 30 * DAY_MS)[0] == start + 23 * DAY_MS  # the later start
    assert RunFilters.parse({"start": "yesterday"}).start is None
    reply = served.get("/runs?start=2001-01-01&end=2001-01-31")
    assert reply.status == 200
    assert "0 runs" in reply.body
    assert 'value="2001-01-01"' in reply.body
    assert "0 runs" not in served.get("/runs?start=2001-01-01").body
