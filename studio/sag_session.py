"""Session glue of the Agent group page: the SAG store, and where a launched run gets its models.

Session state read here:

- ``st.session_state[keys.SAG_MODELS]`` (:data:`MODELS_KEY`): an optional function
  ``cfg -> (runners, retrievers)`` giving the turn runners and retrievers of a run
  launched from the page (tests point it at scripted runners).  Unset, the run builds the
  real ones: :func:`sag.debate.runners.build_runners` for ``cfg.models()`` and
  :func:`sag.retrieval.retrievers` for the group's corpora (``run_sag``'s defaults).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import streamlit as st

from common.db import StoreError, default_db_path
from common.errors import ProjectError
from runtime.turns import TurnRunner
from sag.group.config import GroupConfig
from sag.debate.hybrid import Searcher
from studio.views.sag_launch import progress_update
from common.work import WorkSummary
from sag.runs.run import SagRunSpec, default_runners, run_sag
from studio.executor_choice import executor_for
from sag.store.tables import SagStore
from studio.store_scope import open_for_run
from studio.literal import literal
# names its page imports from here (pages import from studio only)
from clinical.questions import BENCHMARKS
from sag.group.config import PRESETS
from studio.views.sag_launch import time_estimate
from studio.views.sag_group_view import (DISCLAIMER, NO_RUN_HINT, changed_items, item_labels, load_item_view,
                                         run_labels, turn_markdown)
from studio.views.session_keys import SAG_MODELS as MODELS_KEY
from studio.views import session_keys as keys

__all__ = ["MODELS_KEY", "ModelsHook", "sag_store", "launch_run"]

ModelsHook = Callable[[GroupConfig], tuple[Mapping[str, TurnRunner] | None, Mapping[str, Searcher] | None]]


def sag_store() -> SagStore | None:
    """This page run's hold on the SAG tables (:mod:`studio.store_scope`), or None (with a
    message) if the store cannot open or another program kept it busy too long."""
    try:
        with st.spinner("Waiting for the result store (another program is writing to it)"):
            return open_for_run(SagStore, str(default_db_path()))
    except StoreError as exc:
        st.error(f"The result store cannot be opened: {literal(exc)}")
        return None


class _CountedRunner:
    """A turn runner that reports each batch of turns it plays (the launch's live count)."""

    def __init__(self, inner: Any, played: Callable[[int], None]) -> None:
        self._inner, self._played = inner, played

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def run(self, requests: Sequence[Any]) -> list[Any]:
        results = self._inner.run(requests)
        self._played(len(requests))
        return results


def _counted(runners: Any, played: Callable[[int], None]) -> Callable[[GroupConfig], Mapping[str, Any]]:
    """A runner factory whose runners report their turns (``runners``: a mapping, a factory or None)."""
    def factory(cfg: GroupConfig) -> Mapping[str, Any]:
        made = runners if isinstance(runners, Mapping) else (runners or default_runners)(cfg)
        return {key: _CountedRunner(runner, played) for key, runner in made.items()}
    return factory


def launch_run(db: SagStore, spec: SagRunSpec, *, executor: str = "process") -> WorkSummary:
    """Run ``spec`` into the store with a progress bar counting the items and the turns
    played; the models come from the session's hook (:data:`MODELS_KEY`) or, by default,
    are loaded for the run.  On Ray (``executor="ray"``) the workers load the models and
    the bar counts items only.  A :class:`~common.errors.ProjectError` (bad settings, a model
    that cannot load) removes the bar and is raised for the page to show."""
    hook: ModelsHook | None = st.session_state.get(MODELS_KEY)
    bar = st.progress(0.0, text="loading the models and retrieval indexes")
    state = {"turns": 0, "fraction": 0.0, "text": "starting"}

    def show() -> None:
        bar.progress(state["fraction"], text=f"{state['text']} · {state['turns']} turns played")

    def progress(done: int, total: int, label: str) -> None:
        state["fraction"], state["text"] = progress_update(done, total, label)
        show()

    def played(n: int) -> None:
        state["turns"] += n
        show()

    try:
        if executor == "ray":
            with executor_for(executor) as where:
                return run_sag(db, spec, progress=progress, executor=where)
        runners, retrievers = hook(spec.cfg) if hook is not None else (None, None)
        return run_sag(db, spec, runners=_counted(runners, played), retrievers=retrievers, progress=progress)
    except ProjectError:
        bar.empty()
        raise
