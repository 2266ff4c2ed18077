"""The embedding model, loaded in a thread of its own, and what to say while it loads.

A first start distils the static model (13 s on a quiet machine, a minute or more on a busy
one); a query must not wait for that, nor answer "no notes found". The first caller starts the
load; a caller then waits at most the seconds it allows, and none at all once a distillation is
known to be under way (waiting five seconds of a minute helps nobody): it gets a
`ModelLoadingError` carrying the progress ("building the embedding model, 40 %"). The worker
waits as long as it takes. A model that cannot load is an error kept for every later caller:
a missing file is not looked for again on each query.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from weaver.errors import ModelLoadingError, SemanticUnavailableError
from weaver.semantic.model import EmbeddingModel

# How often a waiting caller looks whether a distillation has started meanwhile.
POLL_S = 0.05

Load = Callable[[Callable[[float], None]], EmbeddingModel]


class ModelLoader:
    """Loads a model once, in the background, on first demand; thread-safe."""

    def __init__(self, load: Load, model: EmbeddingModel | None = None) -> None:
        self._load = load  # given the progress callback (a fraction 0-1 of a distillation)
        self._model = model
        self._given = model is not None  # never unloaded: there is nothing to load it again
        self._error: SemanticUnavailableError | None = None
        self._done = threading.Event()
        if model is not None:
            self._done.set()
        self._start = threading.Lock()
        self._thread: threading.Thread | None = None
        self._building: float | None = None  # a distillation's share done, when one runs

    def get(self, wait: float | None, stopped: Callable[[], bool] | None = None) -> EmbeddingModel:
        """The model; `ModelLoadingError` when it is not loaded within `wait` seconds (None:
        as long as it takes) or, while waiting, once `stopped()` says so; the load's own
        `SemanticUnavailableError` when it failed."""
        model = self._model
        if model is not None:
            return model
        if not self._done.is_set():
            self._begin()
            self._wait(wait, stopped)
        if self._error is not None:
            raise self._error
        model = self._model
        return model if model is not None else self.get(wait, stopped)  # unloaded meanwhile

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def unload(self) -> bool:
        """Let go of the loaded model (the next `get` loads it again); True if one was.
        A model that failed to load keeps its error, one given at construction stays."""
        with self._start:
            if self._given or self._model is None or not self._done.is_set():
                return False
            self._model = None
            self._thread = None
            self._done.clear()
            return True

    @property
    def loading(self) -> bool:
        return self._thread is not None and not self._done.is_set()

    def progress(self) -> str:
        """What the load is doing, as an answer says it."""
        if self._building is None:
            return "loading the embedding model"
        return f"building the embedding model, {self._building:.0%}".replace("%", " %")

    def _wait(self, wait: float | None, stopped: Callable[[], bool] | None) -> None:
        deadline = None if wait is None else time.monotonic() + wait
        while not self._done.wait(POLL_S):
            distilling = self._building is not None and wait is not None
            late = deadline is not None and time.monotonic() >= deadline
            # A load can wait on another process's distillation (a file lock) for minutes;
            # a stopping worker must not wait with it.
            if distilling or late or (stopped is not None and stopped()):
                progress = self.progress()
                raise ModelLoadingError(progress)

    def _begin(self) -> None:
        with self._start:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="weaver-model-loader", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        try:
            self._model = self._load(self._report)
        except SemanticUnavailableError as exc:
            self._error = exc
        except Exception as exc:  # a bug, not a missing model: still no caller may hang on it
            self._error = SemanticUnavailableError(f"cannot load the embedding model: {exc}")
        finally:
            self._building = None
            self._done.set()

    def _report(self, fraction: float) -> None:
        self._building = min(max(fraction, 0.0), 1.0)
