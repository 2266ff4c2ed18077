"""The dashboard of a server serving several vaults: a switch between them on every page, each
page showing the vault chosen (`?vault=NAME`, then remembered for the pages after it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.helpers import write_files
from weaver.config import Settings, VaultEntry
from weaver.dashboard.site import VAULT_COOKIE, Dashboard
from weaver.runtime.app import App, open_app
from weaver.runtime.state import ServerState


@pytest.fixture
def apps(tmp_path: Path) -> Iterator[dict[str, App]]:
    work = write_files(tmp_path / "work", {"Plan.md": "# Plan\nquarterly zebra\n"})
    home = write_files(tmp_path / "home", {"Garden.md": "# Garden\nzebra in the garden\n"})
    vaults = {"work": VaultEntry(path=work), "home": VaultEntry(path=home)}
    settings = Settings(vault=work, vaults=vaults, default_vault="work")
    opened = {"work": open_app(settings), "home": open_app(settings.for_vault("home"))}
    for app in opened.values():
        app.indexer.reconcile()
    yield opened
    for app in opened.values():
        app.close()


def client_of(dashboard: Dashboard) -> TestClient:
    return TestClient(dashboard.asgi(), base_url="http://127.0.0.1")


def test_the_switch_shows_the_chosen_vaults_pages(apps: dict[str, App]) -> None:
    states = {name: ServerState(app, watch=False) for name, app in apps.items()}
    with client_of(Dashboard(states["work"], "127.0.0.1", states)) as client:
        default = client.get("/search", params={"q": "zebra"})
        assert default.status_code == 200
        assert "Plan.md" in default.text and "Garden.md" not in default.text
        assert 'href="/search?vault=home"' in default.text  # the switch, on the same page
        assert 'class="current" aria-current="true">work<' in default.text
        home = client.get("/search", params={"q": "zebra", "vault": "home"})
        assert "Garden.md" in home.text and "Plan.md" not in home.text
        assert 'class="current" aria-current="true">home<' in home.text
        assert home.cookies.get(VAULT_COOKIE) == "home"
        # The pages after it show the vault chosen, with no parameter in their links.
        note = client.get("/notes/Garden.md")
        assert note.status_code == 200 and "zebra in the garden" in note.text
        assert client.get("/notes/Plan.md").status_code == 404
        assert 'href="/?vault=work"' in note.text  # a note's page switches to the overview
        back = client.get("/search", params={"q": "zebra", "vault": "work"})
        assert "Plan.md" in back.text and "Garden.md" not in back.text


def test_an_unknown_vault_is_a_page_naming_the_vaults(apps: dict[str, App]) -> None:
    states = {name: ServerState(app, watch=False) for name, app in apps.items()}
    with client_of(Dashboard(states["work"], "127.0.0.1", states)) as client:
        page = client.get("/search", params={"vault": "hom"})
        assert page.status_code == 404
        assert "Unknown vault: &#39;hom&#39; (did you mean &#39;home&#39;?" in page.text


def test_one_vault_shows_no_switch(apps: dict[str, App]) -> None:
    state = ServerState(apps["home"], watch=False)
    with client_of(Dashboard(state, "127.0.0.1")) as client:
        page = client.get("/search", params={"q": "zebra"})
        assert "Garden.md" in page.text and "vault-switch" not in page.text
