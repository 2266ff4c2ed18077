"""`proof-task-complete`: notice when a task is done, and how long it took.

A task is a note with `type: task` (the `note_type` setting) or one in the tasks folder (the
`folder` setting, default `Tasks`). It is complete when its `status` is one of `done_statuses`
(default done, completed; any case) or when it has checkboxes and all of them are done, as the
task index reads them through the vault's Tasks statuses (`[x]` and `[-]` close a checkbox,
`[ ]` and `[/]` leave it open: the plugin's `done` and `not done`). When
a task that was not complete becomes complete, a `completion` record (keyed by the note's path)
says which task (`id` and `name` from the frontmatter, else its path and title), why
(`reason`: status or checkboxes), when, and, when the frontmatter has `started_at`, how long it
took: up to `completed_at` in the frontmatter if there is one, else up to now.

What "was" means comes from a `state` record per task, updated whenever its status or
checkboxes change. A task seen for the first time sets that state and completes nothing: it may
have been done for years. By hand, `{}` looks at every task note (setting the baselines).
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from weaver.engine import (
    FileTrigger,
    NewRecord,
    NoInput,
    NoteFacts,
    NoteMoved,
    OnFile,
    WorkflowContext,
    format_duration,
    parse_moment,
    workflow,
)

COMPLETION = "completion"
STATE = "state"


class TaskSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    folder: str = Field(default="Tasks", description='Notes below it are tasks ("" for none)')
    note_type: str = "task"
    done_statuses: list[str] = Field(default_factory=lambda: ["done", "completed"])

    def is_task(self, fact: NoteFacts) -> bool:
        if fact.type is not None and fact.type.casefold() == self.note_type.casefold():
            return True
        folder = self.folder.strip("/")
        return bool(folder) and fact.path.startswith(folder + "/")

    def state_of(self, fact: NoteFacts) -> dict[str, Any]:
        status = (fact.status or "").strip()
        done_by_status = status.casefold() in {s.casefold() for s in self.done_statuses}
        all_checked = fact.tasks_open == 0 and fact.tasks_done > 0
        reason = "status" if done_by_status else "checkboxes" if all_checked else None
        return {
            "status": fact.status,
            "tasksOpen": fact.tasks_open,
            "tasksDone": fact.tasks_done,
            "complete": reason is not None,
            "reason": reason,
        }


@workflow(
    id="proof-task-complete",
    name="Task completion",
    triggers=[OnFile("**", kinds=["add", "modify", "move"])],
    settings_model=TaskSettings,
    timeout=120,
)
def record_completions(ctx: WorkflowContext[NoInput]) -> dict[str, Any]:
    """Record a task's completion, with the time it took when `started_at` is known."""
    settings = ctx.settings or TaskSettings()
    tasks = tasks_to_check(ctx, settings)
    previous = ctx.records.latest_many(list(tasks), kind=STATE)
    now = time.time_ns() // 1_000_000
    completions: list[dict[str, Any]] = []
    changed: list[NewRecord] = []
    for path, fact in tasks.items():
        state = settings.state_of(fact)
        before = previous[path].data if path in previous else None
        if before is not None and state["complete"] and not before.get("complete"):
            completions.append(completion(fact, state["reason"], now))
        if before != state:
            changed.append(NewRecord(path, state, STATE))
    ctx.records.extend(NewRecord(c["path"], c, COMPLETION, now) for c in completions)
    ctx.records.replace_many(changed)
    return {"checked": len(tasks), "completed": completions}


def tasks_to_check(ctx: WorkflowContext[NoInput], settings: TaskSettings) -> dict[str, NoteFacts]:
    """The task notes among the changed ones (a renamed task's state follows it first), or by
    hand every task note."""
    paths: list[str] | None = None
    if isinstance(ctx.trigger, FileTrigger):
        for event in ctx.trigger.events:
            if isinstance(event, NoteMoved):
                ctx.records.move_key(event.old_path, event.path)
        paths = ctx.trigger.paths
    facts = ctx.note_facts(paths)
    return {path: fact for path, fact in sorted(facts.items()) if settings.is_task(fact)}


def completion(fact: NoteFacts, reason: str, now: int) -> dict[str, Any]:
    frontmatter = fact.frontmatter
    started = parse_moment(frontmatter.get("started_at"))
    completed = parse_moment(frontmatter.get("completed_at")) or now
    duration = completed - started if started is not None and completed >= started else None
    return {
        "taskId": _text(frontmatter.get("id")) or _text(frontmatter.get("task_id")) or fact.path,
        "name": _text(frontmatter.get("name")) or fact.title,
        "path": fact.path,
        "reason": reason,
        "status": fact.status,
        "completedAt": completed,
        "startedAt": started,
        "durationMs": duration,
        "duration": None if duration is None else format_duration(duration),
    }


def _text(value: object) -> str | None:
    if value is None or isinstance(value, dict | list) or str(value).strip() == "":
        return None
    return str(value).strip()
