"""The dashboard in a real browser (headless Chromium): each page on the demo vault and on a
generated vault with thousands of notes and executions; trigger -> run page -> live status ->
completed; re-run a failed run; vault health -> broken link -> the note; hostile notes run no
script. Screenshots go to each test's tmp_path; with WEAVER_SCREENSHOTS=<folder> the overview
(of the generated vault) and a run's page are copied there too (how docs/images/ is made, see
docs/dashboard.md).

One browser and one server per vault for the whole module keep it to a few seconds a test.
"""

from __future__ import annotations

import io
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from tests.benchmarks.vaultgen import generate_vault
from tests.dashboard.browser import require_browser, start_chromium
from tests.dashboard.server import Served, fill_history, serve_dashboard
from tests.dashboard.test_http import TOKEN, demo_copy
from weaver.cache.models import Note

pytestmark = pytest.mark.browser

GENERATED_NOTES = 2_000
GENERATED_RUNS = 20_000
PAGES = {
    "overview": "/",
    "runs": "/runs",
    "failed-runs": "/runs?status=failed&period=7d",
    "workflows": "/workflows",
    "workflow": "/workflows/test-slow-echo",
    "vault-health": "/vault",
    "search": "/search?q=graph",
    "graph": "/graph",
}


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    require_browser()
    driver = start_chromium(tmp_path_factory.mktemp("chromium") / "profile")
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    require_browser()
    with serve_dashboard(demo_copy(tmp_path_factory.mktemp("demo"))) as server:
        yield server


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    require_browser()
    vault = tmp_path_factory.mktemp("generated") / "vault"
    generate_vault(vault, GENERATED_NOTES)
    with serve_dashboard(vault, builtins=False) as server:
        fill_history(server.app, GENERATED_RUNS)
        yield server


def shoot(driver: Any, folder: Path, name: str, publish: bool = False) -> Path:
    """A screenshot in the test's folder; with `publish`, also in $WEAVER_SCREENSHOTS."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{name}.png"
    assert driver.save_screenshot(str(target)), f"no screenshot of {name}"
    published = os.environ.get("WEAVER_SCREENSHOTS")
    if publish and published:
        Path(published).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(target, Path(published) / target.name)
    return target


def wait_until(driver: Any, script: str, timeout: float = 10.0, what: str = "") -> Any:
    """Poll a JavaScript expression in the page until it is truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = driver.execute_script(f"return ({script});")
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or script}")
        time.sleep(0.05)


def text_of(driver: Any, css: str) -> str:
    """The element's text as shown, read in the page (no element handle to go stale)."""
    found = driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.innerText.trim() : null;",
        css,
    )
    assert found is not None, f"nothing matches {css!r} on {driver.current_url}"
    return str(found)


def click(driver: Any, css: str) -> None:
    """Click the element; found again should a live refresh replace it between the finding
    and the click (a stale element, seen on a loaded machine)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    for attempt in range(3):
        try:
            driver.find_element(By.CSS_SELECTOR, css).click()
            return
        except StaleElementReferenceException:
            if attempt == 2:
                raise


def open_page(driver: Any, served: Served, path: str) -> None:
    driver.get(served.base + path)
    wait_until(driver, "document.readyState === 'complete'", what=f"{path} to load")
    # A page with live regions reloads them once its event stream opens: wait for that, so
    # that elements found afterwards stay in the page.
    wait_until(
        driver,
        "!document.querySelector('[data-live]') || document.body.dataset.liveEvents !== 'on'"
        " || document.body.dataset.refreshed",
        what=f"{path}'s first live refresh",
    )
    title = driver.title
    assert "Error" not in title, f"{path}: {text_of(driver, 'main')}"


def check_pages(
    driver: Any, served: Served, folder: Path, note: str, publish: bool = False
) -> None:
    for name, path in [*PAGES.items(), ("note", f"/notes/{note}")]:
        open_page(driver, served, path)
        assert text_of(driver, "h1"), f"{path} has no heading"
        if name == "graph":
            nodes = wait_until(driver, "document.body.dataset.graphReady", what="the graph")
            assert int(nodes) > 1
        shoot(driver, folder, f"dashboard-{name}", publish and name == "overview")


def test_each_page_loads_on_the_demo_vault(browser: Any, demo: Served, tmp_path: Path) -> None:
    demo.engine.trigger("test-slow-echo", {"seconds": 0})
    check_pages(browser, demo, tmp_path, "Welcome.md")
    open_page(browser, demo, "/")
    assert text_of(browser, "#health-status") in ("healthy", "degraded")
    shoot(browser, tmp_path, "dashboard-overview")
    open_page(browser, demo, "/graph?note=Welcome.md&depth=2")
    wait_until(browser, "document.body.dataset.graphReady", what="the neighbourhood graph")
    shoot(browser, tmp_path, "dashboard-graph-note")


def test_each_page_loads_on_a_generated_vault(
    browser: Any, generated: Served, tmp_path: Path
) -> None:
    with generated.app.db.connect() as conn:
        note = conn.execute(select(Note.path).order_by(Note.path).limit(1)).scalar_one()
    check_pages(browser, generated, tmp_path, note, publish=True)  # the README's overview
    open_page(browser, generated, "/runs")
    total = text_of(browser, "#run-total")
    assert int(total.split()[0]) >= GENERATED_RUNS, total
    click(browser, "#next-page")
    wait_until(browser, "location.search.includes('page=2')", what="page 2 of the runs")
    assert "page 2 of" in text_of(browser, "#run-total")
    open_page(browser, generated, "/vault")
    assert "broken link targets" in text_of(browser, "main")


def test_trigger_then_watch_the_run_complete_live(
    browser: Any, demo: Served, tmp_path: Path
) -> None:
    from weaver.log import configure_logging

    configure_logging("info", "json", stream=io.StringIO())  # keeps lines per execution
    open_page(browser, demo, "/workflows/test-slow-echo")
    field = browser.find_element("id", "trigger-input")
    field.clear()
    field.send_keys('{"text": "from the browser", "seconds": 2}')
    click(browser, "#trigger-button")
    wait_until(browser, "location.pathname.startsWith('/runs/wf_exec_')", what="the run page")
    first = text_of(browser, "#run-status")
    assert first in ("pending", "running"), first
    browser.execute_script("window.__samePage = true;")
    wait_until(browser, "document.body.dataset.refreshed", 10, "a live update")
    wait_until(
        browser,
        "document.querySelector('#run-status').textContent.trim() === 'completed'",
        15,
        "the run to complete on the page",
    )
    assert browser.execute_script("return window.__samePage === true;"), "the page reloaded"
    assert "from the browser" in text_of(browser, "#run-result")
    assert "echo step" in text_of(browser, "#run-log")
    shoot(browser, tmp_path, "dashboard-run", publish=True)


def test_rerun_a_failed_run(browser: Any, demo: Served, tmp_path: Path) -> None:
    failed = demo.engine.trigger("test-always-fails")
    open_page(browser, demo, f"/runs/{failed.execution_id}")
    assert text_of(browser, "#run-status") == "failed"
    assert "this workflow always fails" in text_of(browser, "#run-error")
    assert "RuntimeError" in text_of(browser, ".traceback")
    click(browser, "#rerun-button")
    wait_until(
        browser,
        "location.pathname.startsWith('/runs/')"
        f" && !location.pathname.endsWith('{failed.execution_id}')",
        what="the new run's page",
    )
    wait_until(
        browser,
        "document.querySelector('#run-status').textContent.trim() === 'failed'",
        10,
        "the re-run to fail too",
    )
    new_id = text_of(browser, "#run-id")
    assert new_id != failed.execution_id
    assert demo.engine.get_status(new_id).trigger.detail == {"via": "dashboard"}
    shoot(browser, tmp_path, "dashboard-rerun")


def test_follow_a_broken_link_from_vault_health_to_the_note(
    browser: Any, demo: Served, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    open_page(browser, demo, "/vault")
    rows = browser.find_elements(By.CSS_SELECTOR, "#broken-links tbody tr")
    row = next(r for r in rows if "Missing Target" in r.text)
    row.find_element(By.CSS_SELECTOR, "a.note-link").click()
    wait_until(browser, "location.pathname.startsWith('/notes/')", what="the note page")
    assert text_of(browser, "#note-path") == "hostile/Script note.md"
    assert "Missing Target" in text_of(browser, "#outgoing .broken")
    shoot(browser, tmp_path, "dashboard-broken-link-note")


def test_follow_a_wikilink_and_a_property_link_between_note_pages(
    browser: Any, demo: Served, tmp_path: Path
) -> None:
    open_page(browser, demo, "/notes/specs/sync-conflicts.md")
    assert "title" in text_of(browser, "#note-properties th")  # a table, not markdown text
    unresolved = "#note-text .internal-link.is-unresolved"
    assert text_of(browser, unresolved) == "Missing Note"
    assert browser.execute_script(
        "const e = document.querySelector(arguments[0]);"
        "return e.tagName === 'SPAN' && Number(getComputedStyle(e).opacity) < 1;",
        unresolved,
    ), "an unresolved link looks and acts like one"
    shoot(browser, tmp_path, "dashboard-note-links")
    click(browser, "#note-properties a.internal-link")
    wait_until(browser, "location.pathname === '/notes/projects/loom-prototype.md'", what="loom")
    click(browser, "#note-text a.internal-embed")
    wait_until(
        browser,
        "location.pathname === '/notes/concepts/shadow-cache.md'",
        what="the embedded note's page",
    )
    assert text_of(browser, "#note-path") == "concepts/shadow-cache.md"


def test_hostile_notes_cannot_run_script(browser: Any, demo: Served, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    for path in (
        "/notes/hostile/Script%20note.md",
        "/notes/hostile/Link%20note.md",
        "/notes/hostile/Bad%20yaml.md",
        "/search?q=hostilemarker",
        "/vault",
        "/graph?note=hostile/Script%20note.md",
    ):
        open_page(browser, demo, path)
        time.sleep(0.2)  # an onerror or onload would have fired by now
        assert browser.execute_script("return window.__pwned === undefined;"), path
    open_page(browser, demo, "/notes/hostile/Script%20note.md")
    links = browser.find_elements(By.PARTIAL_LINK_TEXT, "click me")
    assert not links or not links[0].get_attribute("href").startswith("javascript:")
    assert "<script>" in text_of(browser, "#note-text")  # shown as text
    shoot(browser, tmp_path, "dashboard-hostile-note")


def test_login_with_the_token(browser: Any, tmp_path: Path) -> None:
    vault = demo_copy(tmp_path)
    with serve_dashboard(vault, http_token=TOKEN) as guarded:
        browser.get(guarded.base + "/workflows")
        wait_until(browser, "location.pathname === '/login'", what="the login page")
        shoot(browser, tmp_path, "dashboard-login")
        browser.find_element("id", "token").send_keys(TOKEN)
        click(browser, "#login-button")
        wait_until(browser, "location.pathname === '/workflows'", what="the page asked for")
        cookie = browser.get_cookie("weaver_session")
        assert cookie is not None
        assert cookie["httpOnly"] is True
        assert cookie["sameSite"] == "Strict"
        assert browser.execute_script("return document.cookie.includes('weaver_session');") is False
        browser.delete_all_cookies()
