"""Loading workflow plugins: folders loaded by path, and the `weaver.workflows` entry points.

The built-in workflows (`workflows/` in the repository, installed as `weaver.builtin_workflows`)
load exactly like anyone else's, through Weaver's own `weaver.workflows` entry point. The
installed plugins (entry points, sorted by name) load first, then the folders of
`settings.workflow_dirs` in order: a folder's workflow cannot take an installed one's id.
In a folder, every `*.py` file and every package (a subfolder with `__init__.py`) whose name
does not start with `_` or `.` is one plugin. An entry point may name a module, a `Workflow`,
or a list of them.

A plugin that fails to import (or declares a workflow wrongly) is logged, skipped and listed in
`Registry.errors`; a workflow whose id is taken is refused the same way. The rest load.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Iterable
from dataclasses import replace
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType

import structlog

from weaver.config import Settings
from weaver.engine.definition import Workflow
from weaver.engine.registry import Registry, apply_overrides
from weaver.engine.workflow_errors import DuplicateWorkflowError

log = structlog.get_logger(__name__)

ENTRY_POINT_GROUP = "weaver.workflows"


def load_registry(
    settings: Settings, *, entry_point_group: str | None = ENTRY_POINT_GROUP
) -> Registry:
    """Every workflow Weaver can run with these settings (tests that want the plugin folders
    alone, without the installed ones and the built-ins, pass `entry_point_group=None`)."""
    registry = Registry()
    if entry_point_group is not None:
        load_entry_points(registry, entry_point_group)
    for folder in settings.workflow_dirs:
        load_directory(registry, folder)
    apply_overrides(registry, settings.workflows)
    log.debug("workflows loaded", count=len(registry), errors=len(registry.errors))
    return registry


def load_directory(registry: Registry, folder: Path) -> None:
    if not folder.is_dir():
        registry.add_error(str(folder), "workflow folder not found")
        return
    for path in sorted(folder.iterdir()):
        if path.name.startswith(("_", ".")):
            continue
        if path.suffix == ".py" and path.is_file():
            _load_file(registry, path, path)
        elif path.is_dir() and (path / "__init__.py").is_file():
            _load_file(registry, path, path / "__init__.py")


def _load_file(registry: Registry, plugin: Path, init: Path) -> None:
    """Import one plugin under a private module name unique to its path."""
    digest = hashlib.sha1(str(plugin.resolve()).encode()).hexdigest()[:10]
    name = f"_weaver_plugin_{plugin.stem}_{digest}"
    package = [str(plugin)] if init.name == "__init__.py" else None
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=package)
    if spec is None or spec.loader is None:
        registry.add_error(str(plugin), "cannot be imported")
        return
    module = importlib.util.module_from_spec(spec)
    # In sys.modules before it runs: pydantic and dataclasses look their module up there.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        _forget(name)
        registry.add_error(str(plugin), _describe(exc))
        return
    register_module(registry, module, str(plugin))


def _forget(name: str) -> None:
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]


def load_entry_points(registry: Registry, group: str) -> None:
    for entry in sorted(entry_points(group=group), key=lambda e: e.name):
        source = f"entry point {entry.name} = {entry.value}"
        try:
            loaded = entry.load()
        except Exception as exc:
            registry.add_error(source, _describe(exc))
            continue
        _register_loaded(registry, entry, loaded, source)


def _register_loaded(registry: Registry, entry: EntryPoint, loaded: object, source: str) -> None:
    if isinstance(loaded, ModuleType):
        register_module(registry, loaded, source)
    elif isinstance(loaded, Workflow):
        register_all(registry, [loaded], source)
    elif isinstance(loaded, list | tuple) and all(isinstance(w, Workflow) for w in loaded):
        register_all(registry, loaded, source)
    else:
        registry.add_error(source, f"{entry.value} is not a module or a workflow")


def register_module(registry: Registry, module: ModuleType, source: str) -> None:
    """Register the workflows a module (or its submodules) defines, not those it imports."""
    name = module.__name__
    found = [
        value
        for value in vars(module).values()
        if isinstance(value, Workflow)
        and (value.module == name or value.module.startswith(name + "."))
    ]
    if not found:
        log.warning("workflow plugin defines no workflow", source=source)
    register_all(registry, found, source)


def register_all(registry: Registry, workflows: Iterable[Workflow], source: str) -> None:
    for workflow in workflows:
        try:
            registry.register(_with_source(workflow, source))
        except DuplicateWorkflowError as exc:
            registry.add_error(source, str(exc))


def _with_source(workflow: Workflow, source: str) -> Workflow:
    return replace(workflow, source=source)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
