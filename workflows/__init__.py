"""Weaver's built-in workflows, installed as the package `weaver.builtin_workflows`.

They register through Weaver's own `weaver.workflows` entry point (`builtin`, in
`pyproject.toml`), exactly as a third party's plugin package does; each module's docstring says
what its workflow does. They import only the plugin API, `weaver.engine`.
"""

from .concept_tracker import track_concepts
from .daily_digest import write_digest
from .file_change_logger import log_changes
from .file_deletion_monitor import monitor_deletions
from .markdown_analyzer import analyze_notes
from .spec_kit_review import review_specs
from .task_complete import record_completions

__all__ = [
    "analyze_notes",
    "log_changes",
    "monitor_deletions",
    "record_completions",
    "review_specs",
    "track_concepts",
    "write_digest",
]
