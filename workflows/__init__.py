"""Weaver's built-in workflows, installed as the package `weaver.builtin_workflows`.

They register through Weaver's own `weaver.workflows` entry point (`builtin`, in
`pyproject.toml`), exactly as a third party's plugin package does; each module's docstring says
what its workflow does. They import only the plugin API, `weaver.engine`.
"""

from weaver.builtin_workflows.concept_tracker import track_concepts
from weaver.builtin_workflows.daily_digest import write_digest
from weaver.builtin_workflows.file_change_logger import log_changes
from weaver.builtin_workflows.file_deletion_monitor import monitor_deletions
from weaver.builtin_workflows.markdown_analyzer import analyze_notes
from weaver.builtin_workflows.spec_kit_review import review_specs
from weaver.builtin_workflows.task_complete import record_completions

__all__ = [
    "analyze_notes",
    "log_changes",
    "monitor_deletions",
    "record_completions",
    "review_specs",
    "track_concepts",
    "write_digest",
]
