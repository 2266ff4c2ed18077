"""The benchmark's vault generator (and its query cases' arguments), checked at 50 notes on
every `make test`.

`make bench` is not collected by pytest, so this is what keeps its vaults honest: the same seed
gives the same bytes, and the notes hold what the figures claim to measure (every link form,
broken links, nested tags, link-like text in code that must not count).
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from mcp import Client

from tests.benchmarks import clients
from tests.benchmarks.queries import EDIT_CASES, TOOL_CASES
from tests.benchmarks.vaultgen import VaultFacts, generate_vault
from weaver.config import Settings
from weaver.markdown.parser import ParsedLink, ParsedNote, parse_note
from weaver.markdown.resolver import LinkResolver
from weaver.mcp_server import build_server
from weaver.runtime.app import open_app
from weaver.runtime.state import ServerState

NOTES = 50


def digest(root: Path) -> str:
    """One hash over every file's path and bytes, in path order."""
    total = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        total.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return total.hexdigest()


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, VaultFacts]:
    root = tmp_path_factory.mktemp("bench") / "vault"
    return root, generate_vault(root, NOTES, seed=7)


@pytest.fixture(scope="module")
def parsed(vault: tuple[Path, VaultFacts]) -> dict[str, ParsedNote]:
    root, _ = vault
    notes = sorted(root.rglob("*.md"))
    return {
        p.relative_to(root).as_posix(): parse_note(
            p.relative_to(root).as_posix(), p.read_text(encoding="utf-8")
        )
        for p in notes
    }


def links(parsed: dict[str, ParsedNote]) -> Iterator[tuple[str, ParsedLink]]:
    for path, note in parsed.items():
        for link in note.links:
            yield path, link


def test_the_same_seed_gives_the_same_bytes(vault: tuple[Path, VaultFacts], tmp_path: Path) -> None:
    root, facts = vault
    again = generate_vault(tmp_path / "again", NOTES, seed=7)
    assert again == facts
    assert digest(tmp_path / "again") == digest(root)
    other = generate_vault(tmp_path / "other", NOTES, seed=8)
    assert digest(tmp_path / "other") != digest(root)
    assert other.notes == NOTES


def test_the_facts_describe_the_vault(
    vault: tuple[Path, VaultFacts], parsed: dict[str, ParsedNote]
) -> None:
    root, facts = vault
    assert facts.notes == len(parsed) == NOTES
    assert facts.attachments == len(list(root.rglob("*.png")))
    assert facts.total_bytes == sum(p.stat().st_size for p in root.rglob("*.md"))
    assert facts.hub in parsed and set(facts.sample) <= set(parsed)
    assert facts.broken_links > 0


def test_every_link_form_is_there(parsed: dict[str, ParsedNote]) -> None:
    found = list(links(parsed))
    kinds = {link.kind for _, link in found}
    assert kinds == {"wikilink", "embed", "markdown", "frontmatter"}
    assert any(link.alias for _, link in found if link.kind == "wikilink")
    assert any(link.subpath and not link.subpath.startswith("^") for _, link in found)
    assert any(link.subpath and link.subpath.startswith("^") for _, link in found)
    assert any(link.target == "" and link.subpath for _, link in found)  # [[#Heading]]
    assert any("/" in link.target for _, link in found if link.kind == "wikilink")  # a path
    assert any(link.target.endswith(".png") for _, link in found if link.kind == "embed")
    assert any("%20" not in link.target and " " in link.target for _, link in found)
    assert any(link.kind == "markdown" and link.target.endswith(".md") for _, link in found)


def test_some_links_are_broken_and_code_holds_none(
    vault: tuple[Path, VaultFacts], parsed: dict[str, ParsedNote]
) -> None:
    root, facts = vault
    resolver = LinkResolver(p.relative_to(root).as_posix() for p in root.rglob("*.*"))
    unresolved = [
        link
        for path, link in links(parsed)
        if link.target and resolver.resolve(link.target, path) is None
    ]
    assert len(unresolved) == facts.broken_links
    assert all(link.target.startswith("Missing ") for link in unresolved)  # only those
    targets = {link.target for _, link in links(parsed)}
    assert not {"Not a link", "nope", "inline code"} & targets
    tags = {tag for note in parsed.values() for tag in note.tags}
    assert "not-a-tag" not in tags


def test_tags_are_nested_three_deep(parsed: dict[str, ParsedNote]) -> None:
    tags = {tag for note in parsed.values() for tag in note.tags}
    assert any(tag.count("/") == 2 for tag in tags)
    assert any(tag.count("/") == 1 for tag in tags)
    assert any("/" not in tag for tag in tags)
    assert any(not tag.isascii() for tag in tags) or any(not p.isascii() for p in parsed)
    assert any(note.frontmatter.get("aliases") for note in parsed.values())
    assert any(note.tasks_open + note.tasks_done for note in parsed.values())


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_every_bench_case_calls_its_tool_with_arguments_it_takes(
    vault: tuple[Path, VaultFacts], tmp_path: Path
) -> None:
    """A bench case whose arguments a tool refuses would time an error; caught here, not in a
    ten-minute `make bench`."""
    root, facts = vault
    app = open_app(Settings(vault=root, database_url=f"sqlite:///{tmp_path / 'cache.db'}"))
    try:
        async with Client(build_server(ServerState(app, watch=False))) as client:
            schemas = {t.name: t.input_schema for t in (await client.list_tools()).tools}
    finally:
        app.close()
    for case in (*TOOL_CASES, *EDIT_CASES):
        for i in range(3):
            Draft202012Validator(schemas[case.tool]).validate(case.arguments(facts, i))


def test_the_client_comparison_times_cases_the_query_bench_has() -> None:
    assert set(clients.LABELS) <= {case.label for case in TOOL_CASES}


def test_without_node_the_client_comparison_says_why_instead_of_failing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clients.shutil, "which", lambda name: None)
    with pytest.raises(clients.TypeScriptUnavailableError, match="no `node` and `npm`"):
        clients._install_typescript_sdk(tmp_path / "ts-client")


def test_the_editing_figures_run_on_a_small_vault(
    vault: tuple[Path, VaultFacts], tmp_path: Path
) -> None:
    """The editing group on the 50-note vault: it renames what it tagged and edits every
    kind; the figures' values are not judged here (that is `make bench`)."""
    from tests.benchmarks import editing
    from tests.benchmarks.context import BenchContext

    root, facts = vault
    ctx = BenchContext(workdir=tmp_path, sizes=(NOTES,), reference=NOTES, quick=True, calls=2)
    shutil.copytree(root, ctx.vault(NOTES))
    facts.write(ctx.facts_file(NOTES))
    app = open_app(Settings(vault=ctx.vault(NOTES)))
    app.indexer.reconcile()
    app.close()
    figures = editing.run(ctx)
    assert [f.name.split(",")[0] for f in figures] == [
        "rename_tag carried by 5 of 50 notes",
        "edit_file append",
        "update_frontmatter set",
        "replace_in_file literal",
    ]
    assert not (tmp_path / "vault-editing").exists()


def test_the_postgres_group_runs_only_when_asked_for() -> None:
    """`make bench` alone starts no PostgreSQL server for the comparison; `--postgres` adds it
    to every group or to those `--only` names (the workers group runs either way)."""
    from tests.benchmarks.__main__ import GROUPS, parse_args, wanted

    def groups(*argv: str) -> set[str]:
        args = parse_args(list(argv))
        return {name for name in GROUPS if wanted(args, name)}

    assert groups() == set(GROUPS) - {"postgres"}
    assert groups("--postgres") == set(GROUPS)
    assert groups("--postgres", "--only", "queries") == {"queries", "postgres"}
    assert groups("--only", "postgres") == {"postgres"}
    assert "workers" in groups("--postgres")


def test_the_task_query_figures_run_on_a_small_vault(
    vault: tuple[Path, VaultFacts], tmp_path: Path
) -> None:
    """The task_queries group on the 50-note vault: its vault holds emoji task lines, the
    index writes their rows and the group judges each case and a tasks block; values are
    `make bench`'s."""
    from tests.benchmarks import task_queries
    from tests.benchmarks.context import BenchContext

    root, _facts = vault
    ctx = BenchContext(workdir=tmp_path, sizes=(NOTES,), reference=NOTES, quick=True, calls=2)
    shutil.copytree(root, ctx.vault(NOTES))
    figures = task_queries.run(ctx)  # indexes the vault first
    blocks = len(task_queries.BLOCKS)
    assert len(figures) == len(task_queries.CASES) + 1 + blocks  # + the structured call
    assert all("run_tasks_block" in f.name for f in figures[-blocks:])
    assert figures[-blocks].target is not None
    assert all(f.data["tasks"] >= 2 * NOTES for f in figures)  # about 3 task lines a note
    assert all("× a 50-row page" in f.shown for f in figures)
    assert "📅" in "".join(p.read_text() for p in root.rglob("*.md"))


def test_the_tasks_cost_copy_keeps_the_text_and_drops_only_the_checkboxes(
    vault: tuple[Path, VaultFacts], tmp_path: Path
) -> None:
    """The indexing group's "with tasks over without" compares against this copy: the same
    notes, each `- [ ] ` a plain `- `, so the difference is what reading tasks costs."""
    from tests.benchmarks.indexing import _without_tasks

    root, _facts = vault
    source = shutil.copytree(root, tmp_path / "vault-50")
    copy = _without_tasks(source)
    notes = sorted(p.relative_to(source) for p in source.rglob("*.md"))
    assert sorted(p.relative_to(copy) for p in copy.rglob("*.md")) == notes
    before = {n: parse_note(str(n), (source / n).read_text("utf-8")) for n in notes}
    after = {n: parse_note(str(n), (copy / n).read_text("utf-8")) for n in notes}
    assert sum(len(p.tasks) for p in before.values()) >= 2 * NOTES
    assert not any(p.tasks for p in after.values())
    assert all(after[n].links == before[n].links for n in notes)
    assert _without_tasks(source) == copy  # made once
