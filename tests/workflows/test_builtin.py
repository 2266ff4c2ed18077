"""The built-in workflows as a whole: they all load through Weaver's own entry point, each has
its own tests, and their schedule and settings are configured like any plugin's."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pydantic_core import to_jsonable_python

from tests.package_layout import REPO
from tests.workflow_vault import BUILTIN_IDS
from weaver.config import Settings, load_settings
from weaver.engine import load_registry

TESTS = Path(__file__).parent


def test_all_built_ins_load_through_the_entry_point(settings: Settings) -> None:
    registry = load_registry(settings)
    assert registry.errors == []
    assert sorted(w.id for w in registry) == sorted(BUILTIN_IDS)
    assert {w.source for w in registry} == {"entry point builtin = weaver.builtin_workflows"}
    assert all(w.description for w in registry)


def test_every_built_in_workflow_has_a_test_module() -> None:
    """A workflow whose id no `tests/workflows/test_*.py` names as its `ID` has no tests."""
    tested = {
        match
        for path in TESTS.glob("test_*.py")
        for match in re.findall(r'^ID = "([^"]+)"', path.read_text(encoding="utf-8"), re.M)
    }
    registry = load_registry(Settings(vault=TESTS))
    assert {w.id for w in registry} <= tested


def test_the_digest_schedule_and_settings_are_configurable(settings: Settings) -> None:
    digest = load_registry(settings).get("proof-daily-digest")
    assert digest is not None
    assert [(s.cron, s.timezone) for s in digest.schedules] == [("0 7 * * *", None)]
    assert digest.settings.folder == "Digests"
    table = {"schedule": "30 6 * * 1-5", "timezone": "Europe/Paris", "settings": {"folder": "D"}}
    configured = settings.model_copy(update={"workflows": {"proof-daily-digest": table}})
    digest = load_registry(configured).get("proof-daily-digest")
    assert digest is not None
    assert [(s.cron, s.timezone) for s in digest.schedules] == [("30 6 * * 1-5", "Europe/Paris")]
    assert digest.settings.folder == "D"


DOCUMENTED_DEFAULTS = """
[workflows.markdown-analyzer.settings]
words_per_minute = 200

[workflows.concept-tracker.settings]
paths = ["Concepts/**"]
note_type = "concept"

[workflows.proof-daily-digest]
schedule = "0 7 * * *"

[workflows.proof-daily-digest.settings]
folder = "Digests"
scheduled_day = "previous"
max_items = 100

[workflows.proof-task-complete.settings]
folder = "Tasks"
note_type = "task"
done_statuses = ["done", "completed"]

[workflows.proof-spec-kit-review.settings]
note_type = "spec"
required_sections = ["User Scenarios & Testing", "Requirements", "Success Criteria"]
required_fields = ["status", "owner"]
write_review = false
review_folder = "Reviews"
"""


def test_the_documented_defaults_are_the_defaults(tmp_path: Path, vault_dir: Path) -> None:
    config = tmp_path / "weaver.toml"
    config.write_text(f'vault = "{vault_dir}"\n{DOCUMENTED_DEFAULTS}', encoding="utf-8")
    spelled_out = load_registry(load_settings(config_path=config))
    defaults = load_registry(Settings(vault=vault_dir))
    assert spelled_out.errors == []
    for workflow in defaults:
        configured = spelled_out.get(workflow.id)
        assert configured is not None
        # Each load imports the plugins anew, so their settings classes differ: compare values.
        assert to_jsonable_python(configured.settings) == to_jsonable_python(workflow.settings)
        assert configured.schedules == workflow.schedules


def weaver_imports(source: Path) -> set[str]:
    """The `weaver` modules a file imports, at any depth of its code."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name == "weaver" or name.startswith("weaver.")}


def test_built_in_workflows_import_only_the_plugin_api() -> None:
    """A built-in workflow is written as a third party's would be: `weaver.engine` only."""
    folder = REPO / "workflows"  # installed as weaver.builtin_workflows
    modules = sorted(folder.glob("*.py"))
    assert len(modules) >= 8  # the package itself and the seven workflows
    for module in modules:
        own = {f"weaver.builtin_workflows.{path.stem}" for path in modules}
        assert weaver_imports(module) - own <= {"weaver.engine"}, module.name


def test_the_import_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    source = tmp_path / "plugin.py"
    source.write_text(
        "from weaver.engine import workflow\n"
        "def run():\n"
        "    from weaver.cache.read import get_file\n"
        "    import weaver.errors\n",
        encoding="utf-8",
    )
    assert weaver_imports(source) == {"weaver.engine", "weaver.cache.read", "weaver.errors"}
