"""Declaring and loading workflows: the decorator's checks, globs, cron weekdays, plugin folders,
entry points, duplicates, broken plugins and `[workflows.<id>]` overrides."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import BaseModel

from weaver.config import Settings
from weaver.engine import (
    DuplicateWorkflowError,
    InvalidInputError,
    OnFile,
    OnSchedule,
    Registry,
    WorkflowDefinitionError,
    load_registry,
    workflow,
)
from weaver.engine.definition import compile_glob, crontab_weekdays
from weaver.engine.registry import configure
from weaver.vault.events import NoteAdded, NoteDeleted, NoteModified, NoteMoved


def write_plugin(folder: Path, name: str, code: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(code), encoding="utf-8")
    return path


def load(settings: Settings, folders: list[Path], **workflows: dict[str, object]) -> Registry:
    configured = settings.model_copy(update={"workflow_dirs": folders, "workflows": workflows})
    return load_registry(configured, entry_point_group=None)


HELLO = """
from pydantic import BaseModel
from weaver.engine import OnFile, OnSchedule, WorkflowContext, workflow

class Greeting(BaseModel):
    name: str = "world"

@workflow(
    id="hello",
    name="Hello",
    triggers=[OnFile("concepts/**", kinds=["add"]), OnSchedule("0 7 * * 1-5", timezone="UTC")],
    input_model=Greeting,
)
def hello(ctx: WorkflowContext[Greeting]) -> str:
    \"\"\"Say hello.

    More words here.\"\"\"
    return "hello " + ctx.input.name
"""


# -- the decorator ------------------------------------------------------------------------------


def test_decorator_describes_without_registering() -> None:
    @workflow(id="plain")
    def plain(_ctx: object) -> int:
        """First paragraph.

        Second paragraph."""
        return 1

    assert plain.id == "plain"
    assert plain.name == "plain"
    assert plain.description == "First paragraph."
    assert plain.triggers == ["manual"]
    assert plain.policy.max_concurrent == 1
    assert plain.enabled
    assert plain(None) == 1  # type: ignore[arg-type]  # still callable


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"id": "bad id"}, "invalid workflow id"),
        ({"id": "x", "timeout": 0}, "timeout"),
        ({"id": "x", "retries": -1}, "negative"),
        ({"id": "x", "max_concurrent": 0}, "max_concurrent"),
    ],
)
def test_decorator_refuses_bad_declarations(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(WorkflowDefinitionError, match=message):
        workflow(**kwargs)  # type: ignore[arg-type]


def test_triggers_are_checked_when_declared() -> None:
    with pytest.raises(WorkflowDefinitionError, match="cron"):
        OnSchedule("every day")
    with pytest.raises(WorkflowDefinitionError, match="time zone"):
        OnSchedule("0 7 * * *", timezone="Mars/Olympus")
    with pytest.raises(WorkflowDefinitionError, match="kind"):
        OnFile("**", kinds=["rename"])
    with pytest.raises(WorkflowDefinitionError, match="glob"):
        OnFile("/absolute/**")


def test_event_triggered_workflow_needs_an_input_model_accepting_nothing() -> None:
    class Needs(BaseModel):
        path: str

    with pytest.raises(WorkflowDefinitionError, match="needs a default"):
        workflow(id="x", input_model=Needs, triggers=[OnFile("**")])
    workflow(id="x", input_model=Needs)  # manual only: fine


def test_input_is_validated_by_the_model() -> None:
    class Count(BaseModel):
        n: int

    @workflow(id="count", input_model=Count)
    def count(_ctx: object) -> None: ...

    assert count.validate_input({"n": "3"}).model_dump() == {"n": 3}
    with pytest.raises(InvalidInputError, match="n: Input should be a valid integer"):
        count.validate_input({"n": "three"})
    with pytest.raises(InvalidInputError, match="expected a JSON object"):
        count.validate_input([1])

    @workflow(id="none")
    def none(_ctx: object) -> None: ...

    assert none.validate_input(None).model_dump() == {}
    with pytest.raises(InvalidInputError, match="Extra inputs"):
        none.validate_input({"surprise": 1})


# -- globs and event matching -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("concepts/**", "concepts/a.md", True),
        ("concepts/**", "concepts/deep/er/a.md", True),
        ("concepts/**", "inbox/x.md", False),
        ("concepts/**", "concepts.md", False),
        ("concepts/**", "other/concepts/a.md", False),
        ("**/*.md", "a.md", True),
        ("**/*.md", "x/y/a.md", True),
        ("*.md", "a.md", True),
        ("*.md", "x/a.md", False),
        ("**/daily/*.md", "daily/2024.md", True),
        ("**/daily/*.md", "journal/daily/2024.md", True),
        ("**/daily/*.md", "journal/daily/sub/2024.md", False),
        ("a/**/b.md", "a/b.md", True),
        ("a/**/b.md", "a/x/y/b.md", True),
        ("notes/20??-*.md", "notes/2024-x.md", True),
        ("notes/[!x]*.md", "notes/y.md", True),
        ("notes/[!x]*.md", "notes/x.md", False),
        ("notes/[a-c].md", "notes/b.md", True),
        ("notes/(1).md", "notes/(1).md", True),
    ],
)
def test_globs_match_whole_paths(pattern: str, path: str, expected: bool) -> None:
    assert bool(compile_glob(pattern).match(path)) is expected


def test_file_trigger_filters_by_kind_and_path() -> None:
    trigger = OnFile("concepts/**", kinds=["add", "move"])
    assert trigger.matches(NoteAdded("concepts/a.md"))
    assert not trigger.matches(NoteModified("concepts/a.md"))
    assert not trigger.matches(NoteAdded("inbox/a.md"))
    assert trigger.matches(NoteMoved(old_path="concepts/a.md", path="archive/a.md"))
    assert trigger.matches(NoteMoved(old_path="inbox/a.md", path="concepts/a.md"))
    assert OnFile().matches(NoteDeleted("x/y.md"))  # by default: every path, every kind


# -- cron ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("1-5", "mon,tue,wed,thu,fri"),
        ("0", "sun"),
        ("7", "sun"),
        ("0,6", "sun,sat"),
        ("*/2", "sun,tue,thu,sat"),
        ("*", "*"),
        ("mon-fri", "mon-fri"),
    ],
)
def test_crontab_weekdays_mean_what_cron_means(spec: str, expected: str) -> None:
    assert crontab_weekdays(spec) == expected


def test_weekday_one_is_monday() -> None:
    from datetime import UTC, datetime

    trigger = OnSchedule("0 7 * * 1", timezone="UTC").build_trigger()
    sunday = datetime(2025, 1, 5, 12, tzinfo=UTC)
    fire = trigger.get_next_fire_time(None, sunday)
    assert fire.strftime("%A %H:%M") == "Monday 07:00"
    assert str(fire.tzinfo) == "UTC"


# -- loading ------------------------------------------------------------------------------------


def test_directory_plugins_load_by_path(settings: Settings, tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    write_plugin(folder, "hello.py", HELLO)
    write_plugin(folder, "_private.py", "raise RuntimeError('never imported')")
    write_plugin(folder, "README.md", "not a plugin")
    write_plugin(
        folder,
        "pack/__init__.py",
        "from .impl import packaged\n",
    )
    write_plugin(
        folder,
        "pack/impl.py",
        """
        from weaver.engine import workflow

        @workflow(id="packaged")
        def packaged(ctx):
            return 1
        """,
    )
    registry = load(settings, [folder])
    assert [w.id for w in registry] == ["hello", "packaged"]
    hello = registry.get("hello")
    assert hello is not None
    assert hello.source == str(folder / "hello.py")
    assert hello.name == "Hello"
    assert hello.description == "Say hello."
    assert hello.triggers == ["manual", "file-change", "schedule"]
    assert hello.input_model.model_json_schema()["properties"]["name"]["default"] == "world"
    assert registry.errors == []


def test_entry_point_plugins_load_the_same_way(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real distribution on sys.path, found by importlib.metadata like an installed one."""
    site = tmp_path / "site"
    write_plugin(
        site,
        "weaver_extra_plugin.py",
        """
        from weaver.engine import workflow

        @workflow(id="from-entry-point", name="Installed")
        def installed(ctx):
            return "installed"

        @workflow(id="second-one")
        def second(ctx):
            return 2
        """,
    )
    dist = site / "weaver_extra_plugin-1.0.dist-info"
    write_plugin(
        dist, "METADATA", "Metadata-Version: 2.1\nName: weaver-extra-plugin\nVersion: 1.0\n"
    )
    write_plugin(
        dist,
        "entry_points.txt",
        "[weaver.workflows]\nextra = weaver_extra_plugin\nsingle = weaver_extra_plugin:second\n"
        "broken = weaver_missing_module\n",
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "weaver_extra_plugin", raising=False)
    configured = settings.model_copy(update={"workflow_dirs": []})
    registry = load_registry(configured)
    assert "from-entry-point" in registry
    assert registry.get("from-entry-point").source == "entry point extra = weaver_extra_plugin"  # type: ignore[union-attr]
    # `single` names a workflow the `extra` module already registered: refused, loudly.
    sources = {e.source: e.error for e in registry.errors}
    assert (
        "duplicate workflow id 'second-one'"
        in sources["entry point single = weaver_extra_plugin:second"]
    )
    assert "ModuleNotFoundError" in sources["entry point broken = weaver_missing_module"]


def test_duplicate_id_is_refused_loudly(settings: Settings, tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    write_plugin(first, "a.py", HELLO)
    write_plugin(second, "b.py", HELLO.replace('name="Hello"', 'name="Impostor"'))
    registry = load(settings, [first, second])
    assert registry.get("hello").name == "Hello"  # type: ignore[union-attr]  # first one wins
    assert len(registry.errors) == 1
    assert registry.errors[0].source == str(second / "b.py")
    assert "duplicate workflow id 'hello'" in registry.errors[0].error
    assert str(first / "a.py") in registry.errors[0].error

    direct = Registry()
    direct.register(registry.get("hello"))  # type: ignore[arg-type]
    with pytest.raises(DuplicateWorkflowError):
        direct.register(registry.get("hello"))  # type: ignore[arg-type]


def test_broken_plugins_are_listed_and_the_rest_loads(settings: Settings, tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    write_plugin(folder, "a_syntax.py", "def broken(:\n")
    write_plugin(folder, "b_import.py", "import weaver_no_such_dependency\n")
    write_plugin(
        folder,
        "c_declaration.py",
        "from weaver.engine import OnSchedule, workflow\n"
        "@workflow(id='bad', triggers=[OnSchedule('61 * * * *')])\ndef bad(ctx): ...\n",
    )
    write_plugin(folder, "d_good.py", HELLO)
    registry = load(settings, [folder, tmp_path / "missing"])
    assert [w.id for w in registry] == ["hello"]
    errors = {Path(e.source).name: e.error for e in registry.errors}
    assert errors["a_syntax.py"].startswith("SyntaxError")
    assert "weaver_no_such_dependency" in errors["b_import.py"]
    assert "invalid cron" in errors["c_declaration.py"]
    assert errors["missing"] == "workflow folder not found"
    assert not any(name.startswith("_weaver_plugin_a_syntax") for name in sys.modules)


def test_installed_plugins_load_before_folders(settings: Settings, tmp_path: Path) -> None:
    """A folder's workflow cannot take the id of an installed one (a built-in here)."""
    extra = tmp_path / "extra"
    write_plugin(extra, "digest.py", HELLO.replace('id="hello"', 'id="proof-daily-digest"'))
    configured = settings.model_copy(update={"workflow_dirs": [extra]})
    registry = load_registry(configured)
    digest = registry.get("proof-daily-digest")
    assert digest is not None
    assert digest.source == "entry point builtin = weaver.builtin_workflows"
    assert [Path(e.source).name for e in registry.errors] == ["digest.py"]


# -- config overrides ---------------------------------------------------------------------------


def test_config_disables_reschedules_and_sets_settings(settings: Settings, tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    write_plugin(folder, "hello.py", HELLO)
    registry = load(
        settings,
        [folder],
        hello={
            "enabled": False,
            "schedule": "30 6 * * *",
            "timezone": "Europe/Paris",
            "settings": {"greeting": "hi"},
        },
    )
    hello = registry.get("hello")
    assert hello is not None
    assert not hello.enabled
    assert [(s.cron, s.timezone) for s in hello.schedules] == [("30 6 * * *", "Europe/Paris")]
    assert hello.settings == {"greeting": "hi"}
    unscheduled = load(settings, [folder], hello={"schedule": ""}).get("hello")
    assert unscheduled is not None and unscheduled.schedules == ()
    assert unscheduled.triggers == ["manual", "file-change"]


def test_settings_model_validates_config(settings: Settings) -> None:
    class Options(BaseModel):
        folder: str = "concepts"
        limit: int = 10

    @workflow(id="opts", settings_model=Options)
    def opts(_ctx: object) -> None: ...

    assert configure(opts, {}).settings == Options()
    assert configure(opts, {"settings": {"limit": "5"}}).settings == Options(limit=5)
    with pytest.raises(WorkflowDefinitionError, match="settings: limit"):
        configure(opts, {"settings": {"limit": "many"}})
    with pytest.raises(WorkflowDefinitionError, match="schedle: Extra inputs"):
        configure(opts, {"schedle": "* * * * *"})


def test_bad_config_drops_that_workflow_only(settings: Settings, tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    write_plugin(folder, "hello.py", HELLO)
    write_plugin(folder, "other.py", HELLO.replace('id="hello"', 'id="other"'))
    registry = load(settings, [folder], hello={"schedule": "not cron"}, ghost={"enabled": False})
    assert [w.id for w in registry] == ["other"]
    assert [str(e) for e in registry.errors] == [
        "config [workflows.hello]: invalid cron 'not cron': 5 fields (or 6 with seconds first)"
    ]
