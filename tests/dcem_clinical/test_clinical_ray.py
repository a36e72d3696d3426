"""The clinical grid on Ray (a local instance of 2 CPUs started here): cells computed by the
workers against their own in-memory call log equal the in-process cells, row for row (two
cells computed at once cannot answer from each other's calls, so a call both make is logged
twice), the calls they made land in the driver's log, and the same command then resumes
with no call."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from common.ray_work import RayExecutor
from dcem.core.config import MediatorConfig
from dcem.store.database import Store
from dcem_clinical.run import ClinicalSpec, run_clinical
from tests.dcem_clinical.clinical_fakes import oracle_backend

pytestmark = pytest.mark.slow

_VOLATILE = {"finished_at", "created_at", "duration_s", "call_id", "git_revision", "info_json"}
_TABLES = ("cells", "cases", "traces", "outcomes", "metrics", "agent_turns", "case_texts", "llm_calls")


def _rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    with Store(path, read_only=True) as store:
        for table in _TABLES:
            cols = [r[0] for r in store.con.execute(f"DESCRIBE {table}").fetchall() if r[0] not in _VOLATILE]
            out[table] = sorted(store.con.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall(), key=repr)
    return out


def _turns(path: Path) -> list[tuple[Any, ...]]:
    """The agent turns without their ``cached`` flag."""
    with Store(path, read_only=True) as store:
        cols = [r[0] for r in store.con.execute("DESCRIBE agent_turns").fetchall() if r[0] != "cached"]
        return sorted(store.con.execute(f"SELECT {', '.join(cols)} FROM agent_turns").fetchall(), key=repr)


def _replies(path: Path) -> dict[str, tuple[Any, ...]]:
    """Each logged call's reply, by its cache key."""
    with Store(path, read_only=True) as store:
        rows = store.con.execute("SELECT cache_key, raw_reply, parsed_json, probabilities, error FROM llm_calls").fetchall()
    return {r[0]: tuple(r[1:]) for r in rows}


def _backends() -> list[Any]:
    return [oracle_backend("ddxplus8", tag="a"), oracle_backend("ddxplus8", anchor=6, tag="b")]


def test_clinical_cells_through_ray_equal_the_in_process_cells(tmp_path: Path) -> None:
    spec = ClinicalSpec(dataset="ddxplus8", scenarios=("S1", "S2"), seeds=(0,), n_cal=12, n_test=6,
                        agents=("fake-a", "fake-b"), base_config=MediatorConfig(prior="empirical", t_max=3),
                        free_rounds=2)
    with Store(tmp_path / "here.duckdb") as store:
        here = run_clinical(store, spec, backends=_backends())
    with Store(tmp_path / "ray.duckdb") as store, RayExecutor(workers=2) as ray:
        there = run_clinical(store, spec, backends=_backends(), executor=ray)
        again_backends = _backends()
        again = run_clinical(store, spec, backends=again_backends, executor=ray)
    assert (here.computed, there.computed, there.complete) == (2, 2, True)
    assert (again.computed, again.skipped) == (0, 2) and not any(b.calls for b in again_backends)
    here_rows, ray_rows = _rows(tmp_path / "here.duckdb"), _rows(tmp_path / "ray.duckdb")
    for table in ("cells", "cases", "traces", "outcomes", "metrics", "case_texts"):
        assert ray_rows[table] == here_rows[table], table
    # Two cells that run at once cannot answer from each other's calls: a call both make is
    # made twice (logged twice, and a turn's cached flag may differ); every reply is the same.
    assert _turns(tmp_path / "ray.duckdb") == _turns(tmp_path / "here.duckdb")
    assert _replies(tmp_path / "ray.duckdb") == _replies(tmp_path / "here.duckdb")



def test_a_case_file_run_on_ray_equals_the_in_process_run(tmp_path: Path) -> None:
    """The workers get the file's cases with the job (their process never read the file)."""
    from clinical.case_file import CaseFileOptions, read_case_file
    from clinical.datasets import use_dataset

    example = Path(__file__).resolve().parents[2] / "data" / "examples" / "abdominal_pain_cases.jsonl"
    ds = use_dataset(read_case_file(example, CaseFileOptions(high_risk=("Appendicitis",))))
    spec = ClinicalSpec(dataset=ds.name, scenarios=("S1", "S3a"), seeds=(0,), n_cal=20, n_test=10,
                        agents=("stat:tfidf-lr@history", "stat:tfidf-lr@exam"),
                        base_config=MediatorConfig(prior="empirical", t_max=3), free_rounds=2)
    with Store(tmp_path / "here.duckdb") as store:
        run_clinical(store, spec)
    with Store(tmp_path / "ray.duckdb") as store, RayExecutor(workers=2) as ray:
        there = run_clinical(store, spec, executor=ray)
    assert there.complete and there.computed == 2
    here_rows, ray_rows = _rows(tmp_path / "here.duckdb"), _rows(tmp_path / "ray.duckdb")
    for table in ("cells", "cases", "outcomes", "metrics", "case_texts"):
        assert ray_rows[table] == here_rows[table], table
