"""A group whose model cannot be loaded records nothing (issue 51, item 4's leftover): the
models load before the first part with work is recorded, so a refused ``sag eval`` leaves
no part, no run and no outcome behind; a finished evaluation loads no model again."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runtime.backends import BackendError
from sag.group.config import preset
from sag.evaluation.runner import run_group_eval
from sag.evaluation.suite import SuiteSpec
from sag.store.tables import SagStore
from tests.sag.fakes import ScriptedTurns, constant

TABLES = ("sag_eval_parts", "sag_runs", "sag_outcomes")


def _counts(store: SagStore) -> dict[str, int]:
    return {t: int(store.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in TABLES}


def test_a_model_that_cannot_load_leaves_no_part(tmp_path: Path) -> None:
    spec, cfg = SuiteSpec("accuracy", n_items=2), preset("single")

    def broken(_cfg: Any) -> Any:
        raise BackendError("cannot load model smollm2-135m: not a GGUF file")

    with SagStore(tmp_path / "eval.duckdb") as store:
        before = _counts(store)
        with pytest.raises(BackendError, match="not a GGUF file"):
            run_group_eval(store, spec, cfg, runners=broken, measure_memory=False)
        assert _counts(store) == before == {t: 0 for t in TABLES}


def test_a_finished_evaluation_loads_no_model(tmp_path: Path) -> None:
    spec, cfg = SuiteSpec("accuracy", n_items=2), preset("single")
    loads: list[str] = []

    def runners(c: Any) -> Any:
        loads.append(c.name)
        return {m: ScriptedTurns(constant("A")) for m in c.models()}

    with SagStore(tmp_path / "eval.duckdb") as store:
        assert run_group_eval(store, spec, cfg, runners=runners, measure_memory=False).complete
        assert len(loads) == 1
        again = run_group_eval(store, spec, cfg, runners=runners, measure_memory=False)
        assert again.complete and again.model_calls == 0 and len(loads) == 1
        assert _counts(store)["sag_eval_parts"] > 0
