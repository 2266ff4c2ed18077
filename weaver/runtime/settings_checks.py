"""The checks of settings that need a layer's own knowledge (the cache's file, the semantic
models, a workflow table's cron and zone), run by `config.load_settings` for the command line
so that a bad setting is refused before anything runs.

Each check imports its layer only when it has something to check: a command that never loads
the workflows (`index`, `serve`) does not import the engine's package to start.
"""

from __future__ import annotations

from pathlib import Path

from weaver.config import Problem, Settings, SettingsCheck, refusal


def database_file_problem(settings: Settings) -> Problem | None:
    """A SQLite file named by `database_url` must be in a folder that exists: Weaver makes
    only the default one (`.weaver/` in the vault)."""
    if not settings.database_url:
        return None
    from weaver.cache.recovery import sqlite_file

    cache_file = sqlite_file(settings.database_url)
    if cache_file is None:
        return None
    if not cache_file.parent.is_dir():
        why = f"no folder {cache_file.parent}; create it, or name a file in a folder that exists"
        return "database_url", settings.database_url, why
    if cache_file.is_dir():
        return (
            "database_url",
            settings.database_url,
            "is a folder, not a file; expected the cache's file",
        )
    return None


def embedding_problem(settings: Settings) -> Problem | None:
    model_path, cache_dir = settings.embedding_model_path, settings.embedding_cache_dir
    if model_path is not None and not model_path.is_file():
        return "embedding_model_path", model_path, "no such file; expected an ONNX model file"
    if cache_dir is not None and cache_dir.exists() and not cache_dir.is_dir():
        return "embedding_cache_dir", cache_dir, "is a file, not a folder (made when needed)"
    if model_path is not None:
        return None
    from weaver.semantic.model import DEFAULT_MODEL, TRANSFORMER_MODEL

    model = settings.embedding_model
    if model not in (DEFAULT_MODEL, TRANSFORMER_MODEL):
        why = (
            f"expected {DEFAULT_MODEL!r} or {TRANSFORMER_MODEL!r} (they ship with the semantic "
            "extra), or another model's ONNX file as embedding_model_path"
        )
        return "embedding_model", model, why
    return None


def workflow_table_problem(settings: Settings) -> Problem | None:
    """A `[workflows.<id>]` table that no workflow could take (a bad cron, time zone or key):
    refused here, where it would otherwise only drop its workflow when the plugins load."""
    if not settings.workflows:
        return None
    from weaver.engine.registry import override_problem

    for workflow_id, table in settings.workflows.items():
        problem = override_problem(table)
        if problem is not None:
            key, value, why = problem
            return f"workflows.{workflow_id}.{key}", value, why
    return None


def check_workflow_tables(settings: Settings, config_file: Path | None) -> None:
    """`workflow_table_problem` as `load_settings` would refuse it (the tables come only from
    the config file), for `weaver serve`, which checks them after its tool manifest had its
    chance to answer without the engine (`SERVE_SETTINGS_CHECKS`)."""
    problem = workflow_table_problem(settings)
    if problem is not None:
        raise refusal(problem, f"in {config_file}" if config_file else "in settings")


SETTINGS_CHECKS: tuple[SettingsCheck, ...] = (
    database_file_problem,
    embedding_problem,
    workflow_table_problem,
)
# `weaver serve`'s: its workflow tables are checked by `check_workflow_tables`, unless a tool
# manifest is found for these very settings (`host.quick_start`), which only a server started
# with them, hence with the tables checked, can have written.
SERVE_SETTINGS_CHECKS: tuple[SettingsCheck, ...] = (database_file_problem, embedding_problem)
