"""Fuzz: model calls that fail anywhere in a run (any agent, any round, any group, any
item) never become answers.

Each input is a group, a few items and a failure pattern (which turns fail, with which
error); the run goes into one store under its own run id.  Checked: every item is either
answered with no failed turn in its transcript or stored as failed (never both); the
run is finished exactly when every item is answered; the report counts failed items apart;
a rerun with a healthy model answers exactly the failed items and finishes the run.
Items are also played alone (no store), where every input is cheap: ItemFailed exactly when
a turn failed, naming the first failed agent.  The default run tries 6 runs and 150 items;
``pytest -m fuzz_large -s`` tries 300 runs (each a run and its rerun in a
store) and 10,000 items.
"""
from __future__ import annotations

import hashlib
import itertools
import math
from pathlib import Path
from typing import Any, Sequence

import pytest
from hypothesis import settings
from hypothesis import strategies as st

from clinical.questions import load_benchmark
from runtime.turns import TurnRequest, TurnResult
from sag.group.config import preset
from sag.group.failures import ItemFailed
from sag.debate.answer import answer_item
from sag.runs.report import summarise
from sag.runs.run import run_items
from sag.store.tables import SagStore
from tests.dcem.fuzz_support import DEFAULT, LARGE, run_budget

from ..fakes import ScriptedTurns, agent_of, constant, round_of

ITEMS = load_benchmark("medqa")[:12]
GROUPS = ["single", "sag-6-majority", "sag-6", "sag-6-no_judge", "sag-6-no_safety", "sag-6-no_reasoning"]
ERRORS = ["connection refused", "prompt of 40109 tokens exceeds the context of 4096 tokens per sequence",
          "HTTP 500: internal error", "reply broken off", "", "\x1b[2J", "x" * 2000]


class Flaky(ScriptedTurns):
    """Fails a turn when a hash of (pattern seed, item, agent, round) falls under ``rate``."""

    def __init__(self, seed: int, rate: float, error: str, answer: str) -> None:
        super().__init__(constant(answer))
        self.seed, self.rate, self.error = seed, rate, error or "unknown failure"
        self.failed = 0

    def _fails(self, request: TurnRequest) -> bool:
        text = request.messages[-1].content
        item = next((it.item_id for it in ITEMS if it.question in text), "?")
        key = f"{self.seed}|{item}|{agent_of(request)}|{round_of(text)}".encode()
        return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") / 2 ** 32 < self.rate

    def run(self, requests: Sequence[TurnRequest]) -> list[TurnResult]:
        out = super().run(requests)
        fails = [self._fails(r) for r in requests]
        self.failed += sum(fails)
        return [TurnResult(tuple(-math.log(len(r.options)) for _ in r.options), "", error=self.error) if bad else res
                for r, res, bad in zip(requests, out, fails)]


patterns = st.fixed_dictionaries({
    "group": st.sampled_from(GROUPS), "t_max": st.integers(1, 2), "n": st.integers(1, 4),
    "offset": st.integers(0, len(ITEMS) - 4), "seed": st.integers(0, 2 ** 31),
    "rate": st.sampled_from([0.0, 0.02, 0.1, 0.3, 1.0]) | st.floats(0, 1),
    "error": st.sampled_from(ERRORS), "answer": st.sampled_from(["A", "B", "C", "REFUSE"])})


def _check(store: SagStore) -> Any:
    counter = itertools.count()

    def check(p: dict[str, Any]) -> str:
        cfg = preset(p["group"]).with_changes(t_max=p["t_max"])
        items = ITEMS[p["offset"]:p["offset"] + p["n"]]
        run_id = f"fuzz-{next(counter)}"
        flaky = Flaky(p["seed"], p["rate"], p["error"], p["answer"])
        first = run_items(store, run_id, benchmark="medqa", cfg=cfg, seed=0, evaluation=items,
                          runners={m: flaky for m in cfg.models()}, retrievers={})
        outcomes, failures = store.outcomes(run_id), store.failures(run_id)
        answered, failed = set(outcomes["item_id"]), set(failures["item_id"])
        assert not answered & failed and answered | failed <= {it.item_id for it in items}
        assert {f.item_id for f in first.failed} == failed and len(answered) == first.computed
        assert (len(failed) > 0) == (flaky.failed > 0) or first.stopped is not None
        for item_id in answered:
            messages = store.messages(run_id, item_id)
            assert messages["error"].isna().all(), "an answered item has a failed turn"
        for row in failures.itertuples():
            assert "failed" in row.reason and row.attempts == 1 and row.model_calls >= 1
        status = store.runs().set_index("run_id").loc[run_id, "status"]
        assert (status == "finished") == (len(answered) == len(items))
        if failed:
            row = summarise(store.outcomes(run_id), failures).iloc[0]
            assert row["failed"] == len(failed) and row["items"] == len(answered)
        healthy = ScriptedTurns(constant(p["answer"]))
        again = run_items(store, run_id, benchmark="medqa", cfg=cfg, seed=0, evaluation=items,
                          runners={m: healthy for m in cfg.models()}, retrievers={})
        assert again.computed == len(items) - len(answered) and not again.failed
        assert store.failures(run_id).empty and len(store.outcomes(run_id)) == len(items)
        return "error" if failed else "valid"
    return check


def _check_item(p: dict[str, Any]) -> str:
    """One item played without a store: ItemFailed exactly when a turn failed."""
    cfg = preset(p["group"]).with_changes(t_max=p["t_max"])
    item = ITEMS[p["offset"]]
    flaky = Flaky(p["seed"], p["rate"], p["error"], p["answer"])
    try:
        result = answer_item(item, cfg, {m: flaky for m in cfg.models()}, {})
    except ItemFailed as exc:
        failure = exc.failure
        bad = [m for m in failure.messages if m.error is not None]
        assert flaky.failed == len(bad) > 0 and failure.item_id == item.item_id
        assert failure.reason.startswith(f"the call of {bad[0].agent_id} ") and failure.model_calls >= len(bad)
        return "error"
    assert flaky.failed == 0 and all(m.error is None for m in result.outcome.messages)
    assert result.answer in item.letters + ("REFUSE",)
    return "valid"


def _fuzz_runs(tmp_path: Path, budget: settings) -> None:
    with SagStore(tmp_path / "fuzz.duckdb") as store:
        runs = patterns.map(lambda p: {**p, "t_max": 1, "n": min(p["n"], 3)})
        counts = run_budget("failed model calls in a stored run", runs, _check(store), budget)
    assert counts["error"] and counts["valid"]


def _fuzz_items(budget: settings) -> None:
    counts = run_budget("failed model calls in one item", patterns, _check_item, budget)
    assert counts["error"] and counts["valid"]


def test_fuzz_failed_calls_in_runs(tmp_path: Path) -> None:
    _fuzz_runs(tmp_path, settings(DEFAULT, max_examples=6))


def test_fuzz_failed_calls_in_items() -> None:
    _fuzz_items(settings(DEFAULT, max_examples=150))


@pytest.mark.fuzz_large
def test_fuzz_failed_calls_in_runs_large(tmp_path: Path) -> None:
    _fuzz_runs(tmp_path, settings(LARGE, max_examples=300))  # each input is a run (and its rerun) in a store


@pytest.mark.fuzz_large
def test_fuzz_failed_calls_in_items_large() -> None:
    _fuzz_items(LARGE)
