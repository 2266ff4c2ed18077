"""`proof-daily-digest`: one note a day saying what happened in the vault.

Every day at 07:00 local time (override with `[workflows.proof-daily-digest] schedule = ...`)
it digests the day before (the `scheduled_day` setting: "previous" or "same"); by hand it
digests `{"date": "YYYY-MM-DD"}`, or today so far. A day runs from local midnight to the next.

It gathers what the other built-in workflows recorded that day, so a section stays empty while
the workflow behind it is disabled: the notes created, modified, deleted and moved (the change
log), the tags new to the vault and the new broken links still broken (the markdown analyzer
and the deletion monitor), the tasks completed (task completion) and the workflow runs that
failed (the execution history); and, from the task index as it is when the digest is written,
the open tasks overdue on that day and those due that day. A day further back than that
history is kept (by default 90 days of superseded change-log and analyzer records, 30 days of
executions) is digested from what is left of it. It writes `<folder>/Digest YYYY-MM-DD.md`
(replacing that day's earlier digest) through `ctx.vault`, so the watcher indexes it like any
note but it starts no workflow, and returns its content with the same lists as JSON. Notes that
exist are linked; deleted notes, tags, link targets and task texts are written as code, so the
digest adds no tag and no broken link of its own to the vault.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from weaver.engine import (
    BrokenLink,
    FoundTask,
    OnSchedule,
    ScheduleTrigger,
    StoredRecord,
    WorkflowContext,
    code,
    format_duration,
    normalize_tag,
    note_link,
    workflow,
)

DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
ERROR_CHARS = 200


class DigestInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    date: dt.date | None = Field(
        default=None, description="The day to digest, YYYY-MM-DD (default: today so far)"
    )


class DigestSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    folder: str = Field(default="Digests", description='Vault folder of the digests ("": root)')
    scheduled_day: Literal["previous", "same"] = Field(
        default="previous", description="Which day a scheduled run digests"
    )
    max_items: int = Field(default=100, ge=1, le=10_000, description="Lines per section")


@dataclass
class DayActivity:
    """What happened in the vault during one day."""

    created: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    moved: list[dict[str, str]] = field(default_factory=list)
    new_tags: list[str] = field(default_factory=list)
    new_broken_links: list[dict[str, str]] = field(default_factory=list)
    tasks_completed: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    overdue: list[dict[str, Any]] = field(default_factory=list)  # open tasks, the first shown
    due_today: list[dict[str, Any]] = field(default_factory=list)
    task_totals: dict[str, int] = field(default_factory=dict)  # overdue, dueToday: all of them

    def counts(self) -> dict[str, int]:
        counted = {name: len(items) for name, items in self.as_json().items()}
        return counted | self.task_totals

    def as_json(self) -> dict[str, list[Any]]:
        return {
            "created": self.created,
            "modified": self.modified,
            "deleted": self.deleted,
            "moved": self.moved,
            "newTags": self.new_tags,
            "newBrokenLinks": self.new_broken_links,
            "tasksCompleted": self.tasks_completed,
            "failures": self.failures,
            "overdue": self.overdue,
            "dueToday": self.due_today,
        }


@workflow(
    id="proof-daily-digest",
    name="Daily digest",
    triggers=[OnSchedule("0 7 * * *")],
    input_model=DigestInput,
    settings_model=DigestSettings,
    timeout=300,
)
def write_digest(ctx: WorkflowContext[DigestInput]) -> dict[str, Any]:
    """Write a note digesting one day: notes changed, new tags and broken links, tasks done,
    workflow failures."""
    settings = ctx.settings or DigestSettings()
    day, zone = digest_day(ctx, settings)
    since, until = day_bounds(day, zone)
    activity = gather(ctx, since, until)
    add_open_tasks(ctx, activity, day, settings.max_items)
    existing = set(ctx.note_facts(mentioned_paths(activity)))
    keep_still_broken(activity, ctx.broken_links(existing))
    content = render(day, activity, existing, settings.max_items)
    folder = settings.folder.strip("/")
    name = f"Digest {day.isoformat()}.md"
    path = ctx.vault.write_text(f"{folder}/{name}" if folder else name, content)
    counts = activity.counts()
    ctx.records.append(day.isoformat(), {"date": day.isoformat(), "path": path, "counts": counts})
    return {
        "date": day.isoformat(),
        "path": path,
        "counts": counts,
        **activity.as_json(),
        "content": content,
    }


def digest_day(
    ctx: WorkflowContext[DigestInput], settings: DigestSettings
) -> tuple[dt.date, dt.tzinfo | None]:
    """The day to digest, and the time zone its midnights are in (None: the machine's)."""
    if isinstance(ctx.trigger, ScheduleTrigger):
        when = ctx.trigger.scheduled_time
        back = 1 if settings.scheduled_day == "previous" else 0
        return when.date() - dt.timedelta(days=back), when.tzinfo
    return ctx.input.date or dt.date.today(), None


def day_bounds(day: dt.date, zone: dt.tzinfo | None) -> tuple[int, int]:
    """[midnight, next midnight) as Unix epoch ms; a day of a DST change is 23 or 25 hours."""

    def midnight(of: dt.date) -> int:
        naive = dt.datetime.combine(of, dt.time())
        moment = naive.replace(tzinfo=zone) if zone is not None else naive.astimezone()
        return int(moment.timestamp() * 1000)

    return midnight(day), midnight(day + dt.timedelta(days=1))


# -- gathering ----------------------------------------------------------------------------------


def gather(ctx: WorkflowContext[DigestInput], since: int, until: int) -> DayActivity:
    activity = DayActivity()

    def recorded(workflow_id: str, kind: str) -> list[StoredRecord]:
        store = ctx.records.of(workflow_id)
        return store.history(kind=kind, since=since, until=until, limit=None, oldest_first=True)

    add_changes(activity, recorded("file-change-logger", "change"))
    add_analyses(activity, recorded("markdown-analyzer", "analysis"))
    add_deletions(activity, recorded("file-deletion-monitor", "deletion"))
    activity.tasks_completed = [r.data for r in recorded("proof-task-complete", "completion")]
    failed = ctx.failures(since, until)
    activity.failures = [
        {
            "executionId": run.id,
            "workflowId": run.workflow_id,
            "finished": run.finished,
            "error": first_line(run.error or run.message or ""),
        }
        for run in failed
    ]
    return activity


def add_open_tasks(
    ctx: WorkflowContext[DigestInput], activity: DayActivity, day: dt.date, max_items: int
) -> None:
    """The open tasks that were late on `day`, and those due that day (read as they are now:
    the index keeps no history of a task's status)."""
    on = day.isoformat()
    overdue = ctx.query_tasks(f"not done\ndue before {on}\nsort by due", day, 0, max_items)
    due = ctx.query_tasks(f"not done\ndue on {on}", day, 0, max_items)
    activity.overdue = [open_task(task) for task in overdue.page.items]
    activity.due_today = [open_task(task) for task in due.page.items]
    activity.task_totals = {"overdue": overdue.page.total, "dueToday": due.page.total}


def open_task(task: FoundTask) -> dict[str, Any]:
    return {
        "path": task.path,
        "line": task.line,
        "description": task.description,
        "due": task.dates.get("due"),
        "priority": task.priority,
    }


def first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0][:ERROR_CHARS] if lines else ""


def add_changes(activity: DayActivity, changes: list[StoredRecord]) -> None:
    """Notes created, modified (and not created the same day), deleted, and each move."""
    created: dict[str, None] = {}
    modified: dict[str, None] = {}
    deleted: dict[str, None] = {}
    for record in changes:
        kind, path = record.data.get("kind"), record.data.get("path", record.key)
        if kind == "add" and not record.data.get("initial"):  # not found by a first index
            created[path] = None
        elif kind == "modify":
            modified[path] = None
        elif kind == "delete":
            deleted[path] = None
        elif kind == "move":
            activity.moved.append({"from": record.data.get("oldPath", ""), "to": path})
    activity.created = sorted(created)
    activity.modified = sorted(path for path in modified if path not in created)
    activity.deleted = sorted(deleted)


def add_analyses(activity: DayActivity, analyses: list[StoredRecord]) -> None:
    tags: dict[str, str] = {}
    for record in analyses:
        for tag in record.data.get("newTags", []):
            tags.setdefault(normalize_tag(tag), tag)
        for target in record.data.get("newBrokenLinks", []):
            add_broken(activity, record.key, target)
    activity.new_tags = [tags[key] for key in sorted(tags)]


def add_deletions(activity: DayActivity, deletions: list[StoredRecord]) -> None:
    for record in deletions:
        for link in record.data.get("brokenLinks", []):
            add_broken(activity, link["source"], link["target"])
    activity.new_broken_links.sort(key=lambda link: (link["source"], link["target"]))


def add_broken(activity: DayActivity, source: str, target: str) -> None:
    link = {"source": source, "target": target}
    if link not in activity.new_broken_links:
        activity.new_broken_links.append(link)


def keep_still_broken(activity: DayActivity, broken: dict[str, list[BrokenLink]]) -> None:
    """Leave out the day's broken links that were fixed since (or whose note is gone)."""
    now = {(link.source, link.target) for links in broken.values() for link in links}
    activity.new_broken_links = [
        link for link in activity.new_broken_links if (link["source"], link["target"]) in now
    ]


def mentioned_paths(activity: DayActivity) -> set[str]:
    paths = {*activity.created, *activity.modified, *activity.deleted}
    paths.update(move["to"] for move in activity.moved)
    paths.update(link["source"] for link in activity.new_broken_links)
    paths.update(task.get("path", "") for task in activity.tasks_completed)
    return paths


# -- writing ------------------------------------------------------------------------------------


def render(day: dt.date, activity: DayActivity, existing: set[str], max_items: int) -> str:
    def mention(path: str, label: str | None = None) -> str:
        return note_link(path, label) if path in existing else code(path)

    sections = [
        ("Created", [mention(p) for p in activity.created]),
        ("Modified", [mention(p) for p in activity.modified]),
        ("Deleted", [code(p) for p in activity.deleted]),
        ("Moved", [f"{code(m['from'])} → {mention(m['to'])}" for m in activity.moved]),
        ("New tags", [code("#" + tag) for tag in activity.new_tags]),
        (
            "New broken links",
            [f"{mention(b['source'])} → {code(b['target'])}" for b in activity.new_broken_links],
        ),
        ("Tasks completed", [task_line(t, mention) for t in activity.tasks_completed]),
        ("Workflow failures", [failure_line(f) for f in activity.failures]),
    ]
    counts = activity.counts()
    task_sections = [
        ("Overdue", activity.overdue, counts["overdue"]),
        ("Due today", activity.due_today, counts["dueToday"]),
    ]
    lines = [
        "---",
        "type: digest",
        f"date: {day.isoformat()}",
        "---",
        f"# Digest for {DAY_NAMES[day.weekday()]} {day.isoformat()}",
        "",
        summary(activity),
    ]
    for title, items in sections:
        if items:
            lines += ["", f"## {title} ({len(items)})", "", *bulleted(items, max_items)]
    for title, tasks, total in task_sections:
        if tasks:
            shown = [open_task_line(task) for task in tasks]
            lines += ["", f"## {title} ({total})", "", *bulleted(shown, max_items, total)]
    return "\n".join(lines) + "\n"


def summary(activity: DayActivity) -> str:
    counts = activity.counts()
    late = (
        f" Open tasks overdue: {counts['overdue']}, due this day: {counts['dueToday']}."
        if counts["overdue"] or counts["dueToday"]
        else ""
    )
    if not any(v for k, v in counts.items() if k not in ("overdue", "dueToday")):
        return "Nothing happened in the vault on this day." + late
    notes = ", ".join(
        f"{counts[name]} {name}" for name in ("created", "modified", "deleted", "moved")
    )
    return (
        f"Notes: {notes}. New tags: {counts['newTags']}. "
        f"New broken links: {counts['newBrokenLinks']}. "
        f"Tasks completed: {counts['tasksCompleted']}. "
        f"Workflow failures: {counts['failures']}.{late}"
    )


def bulleted(items: list[str], max_items: int, total: int | None = None) -> list[str]:
    """The first `max_items` items, and how many more of `total` (default: all the items)."""
    lines = [f"- {item}" for item in items[:max_items]]
    beyond = (len(items) if total is None else total) - len(lines)
    if beyond > 0:
        lines.append(f"- … and {beyond} more")
    return lines


def open_task_line(task: dict[str, Any]) -> str:
    """The task's text as code (a tag or link in it is not the digest's own), its note linked
    at its line."""
    due = f", due {task['due']}" if task.get("due") else ""
    return f"{code(task['description'])} in {note_link(task['path'])} line {task['line']}{due}"


def task_line(task: dict[str, Any], mention: Callable[[str, str | None], str]) -> str:
    line = mention(str(task.get("path", "")), task.get("name"))
    if task.get("taskId") and task.get("taskId") != task.get("path"):
        line += f" ({code(str(task['taskId']))})"
    if task.get("durationMs") is not None:
        line += f", took {format_duration(int(task['durationMs']))}"
    return line


def failure_line(failure: dict[str, Any]) -> str:
    finished = failure.get("finished")
    at = dt.datetime.fromtimestamp(finished / 1000).strftime("%H:%M") if finished else "?"
    error = code(failure["error"]) if failure["error"] else "failed"
    return f"{at} {code(failure['workflowId'])}: {error} ({code(failure['executionId'])})"
