"""The workflow engine's errors, part of Weaver's one tree (`weaver.errors`).

WeaverError
└── WorkflowError
    ├── WorkflowDefinitionError   a `@workflow(...)` declaration that cannot work
    ├── DuplicateWorkflowError    a second workflow with an id already registered
    ├── EngineUnavailableError    no running engine in this process to ask
    ├── JobTablesMissingError     PostgreSQL: no writer or worker has made the job tables yet
    └── WorkflowRequestError      a request the caller must fix (CLI exit code 2)
        ├── WorkflowNotFoundError     "Workflow not found: 'x'"
        ├── WorkflowDisabledError     "Workflow disabled: 'x'"
        ├── InvalidInputError         "Invalid input for 'x': field: reason"
        ├── ExecutionNotFoundError    "Execution not found: 'x'"
        └── NotCancellableError       an ended run, or one another process runs
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from weaver.errors import WeaverError, did_you_mean, suggest


class WorkflowError(WeaverError):
    """Anything the workflow engine refuses."""


class EngineUnavailableError(WorkflowError):
    """This process hosts no running workflow engine."""

    def __init__(self) -> None:
        super().__init__("Workflow engine not available")


class WorkflowDefinitionError(WorkflowError):
    """A workflow declaration is invalid (bad id, cron, glob, time zone, policy)."""


class DuplicateWorkflowError(WorkflowError):
    """Two workflows claim the same id; the first one registered keeps it."""


class JobTablesMissingError(WorkflowError):
    """A run deferred on a PostgreSQL cache whose job system tables nobody has created: a
    reader never creates them (it writes nothing but the queue), the writer and workers do."""

    def __init__(self) -> None:
        super().__init__(
            "the job system's tables are not in this database yet: start the writer (weaver "
            "daemon) or a worker (weaver worker) on it once, which creates them"
        )


class WorkflowRequestError(WorkflowError):
    """The caller asked for something that cannot be done as asked."""


class WorkflowNotFoundError(WorkflowRequestError):
    """`known`: the registered ids, to name the one a misspelt id probably meant; `broken`:
    the plugins that failed to load, one of which may have declared it."""

    def __init__(
        self, workflow_id: str, known: Iterable[str] = (), broken: Sequence[str] = ()
    ) -> None:
        message = f"Workflow not found: {workflow_id!r}"
        close = suggest(workflow_id, known)
        if close:
            message += f" ({did_you_mean(close)})"
        if broken:
            message += f"; these failed to load (the workflow list says why): {', '.join(broken)}"
        super().__init__(message)
        self.workflow_id = workflow_id


class WorkflowDisabledError(WorkflowRequestError):
    def __init__(self, workflow_id: str) -> None:
        super().__init__(f"Workflow disabled: {workflow_id!r}")
        self.workflow_id = workflow_id


class InvalidInputError(WorkflowRequestError):
    def __init__(self, workflow_id: str, detail: str) -> None:
        super().__init__(f"Invalid input for {workflow_id!r}: {detail}")
        self.workflow_id = workflow_id


class ExecutionNotFoundError(WorkflowRequestError):
    def __init__(self, execution_id: str) -> None:
        super().__init__(f"Execution not found: {execution_id!r}")
        self.execution_id = execution_id


class NotCancellableError(WorkflowRequestError):
    """A run that has ended, or that another process is running (only it can stop it)."""
