"""Clinical runner with scripted models: methods, storage, cache, resume, errors, replay."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dcem.analysis.run_replay import load_run_replay
from dcem.analysis.whatif import rescore
from dcem.core.config import MediatorConfig
from dcem.core.results import METHODS
from common.errors import ConfigError
from dcem.store.database import Store
from dcem_clinical.call_log import call_count
from dcem_clinical.run import ClinicalSpec, run_clinical
from runtime.testing import ScriptedBackend
from tests.dcem_clinical.clinical_fakes import oracle_backend

GERD = 6  # DDXPlus-8 label index of the benign anchor


def _spec(**kw: object) -> ClinicalSpec:
    base = dict(dataset="ddxplus8", scenarios=("S2",), seeds=(0,), n_cal=16, n_test=12,
                agents=("fake-a", "fake-b"), base_config=MediatorConfig(prior="empirical", t_max=4),
                free_rounds=3)
    base.update(kw)
    return ClinicalSpec(**base)  # type: ignore[arg-type]


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "c.duckdb")
    yield s
    s.close()


def _calls(backends: list[ScriptedBackend]) -> int:
    return sum(len(b.calls) for b in backends)


def test_clinical_cell_stores_every_method_with_vectors_texts_turns(store: Store) -> None:
    backends = [oracle_backend("ddxplus8", tag="a"), oracle_backend("ddxplus8", anchor=GERD, tag="b")]
    ticks: list[int] = []
    summary = run_clinical(store, _spec(), backends=backends, progress=lambda d, t, s: ticks.append(d))
    assert summary.complete and summary.computed == 1 and ticks and ticks[-1] == max(ticks)
    run = summary.run_id
    metrics = store.metrics(run)
    assert set(metrics["method"]) == set(METHODS)
    names = set(metrics["metric"])
    assert {"system_risk", "harmful_consensus", "accuracy", "escalation_rate", "avg_rounds",
            "parse_error_rate", "mix_steer", "mix_escalate"} <= names
    dcem = metrics[metrics["method"] == "dcem"].set_index("metric")["value"]
    mix = sum(dcem[f"mix_{a}"] for a in ("continue", "steer", "decide", "escalate"))
    assert mix == pytest.approx(1.0)
    assert dcem["parse_error_rate"] == 0.0
    # the anchored agent B is worse on CAL than agent A (the role prompt works)
    info = json.loads(store.con.execute("SELECT info_json FROM cells WHERE run_id = ?", [run]).fetchone()[0])
    acc_a, acc_b = info["calibration_accuracy"]
    assert acc_a > acc_b
    assert info["n_cal"] == 16 and info["n_test"] == 12 and info["threshold_fit"]["fitted"]
    # stored probability vectors per agent and round, case texts, agent turns
    probs = store.con.execute("SELECT probabilities FROM traces WHERE run_id = ? AND method = 'dcem'",
                              [run]).fetchall()
    assert len(probs) == 12 * 4 and all(np.allclose(np.sum(p[0], axis=1), 1.0) for p in probs)
    assert store.con.execute("SELECT count(*) FROM case_texts WHERE run_id = ?", [run]).fetchone()[0] == 12
    turns = store.con.execute("SELECT method, round, note FROM agent_turns WHERE run_id = ?", [run]).df()
    assert len(turns[turns["method"] == "dcem"]) == 12 * 4 * 2
    later = turns[(turns["method"] == "dcem") & (turns["round"] > 1)]["note"]
    assert later.notna().all()
    free_notes = turns[(turns["method"] == "free") & (turns["round"] > 1)]["note"]
    assert free_notes.str.contains("The other agent answered").all()
    steered = store.con.execute(
        "SELECT steer_features FROM traces WHERE run_id = ? AND method = 'dcem' AND action = "
        "'DIFFERENTIAL_STEER'", [run]).fetchall()
    assert steered and all(list(f[0]) == ["finding one", "finding two"] for f in steered)


def test_rerun_makes_no_model_call_and_resume_skips_finished_cells(store: Store) -> None:
    backends = [oracle_backend("ddxplus8", tag="a"), oracle_backend("ddxplus8", anchor=GERD, tag="b")]
    spec = _spec(seeds=(0, 1))
    stops = iter([False, True])
    first = run_clinical(store, spec, backends=backends, cancel=lambda: next(stops))
    assert not first.complete and first.computed == 1
    rows = call_count(store)
    resumed = run_clinical(store, spec, backends=backends)
    assert resumed.resumed and resumed.computed == 1 and resumed.complete
    assert call_count(store) > rows
    before, rows = _calls(backends), call_count(store)
    fresh = [oracle_backend("ddxplus8", tag="a"), oracle_backend("ddxplus8", anchor=GERD, tag="b")]
    again = run_clinical(store, spec, backends=fresh)
    assert again.computed == 0 and _calls(fresh) == 0 and call_count(store) == rows
    assert _calls(backends) == before
    # a finished cell re-run from scratch (new run id) is answered by the log only
    other = _spec(seeds=(1,), free_rounds=3)
    assert other.run_id() != spec.run_id()
    run_clinical(store, other, backends=fresh)
    assert _calls(fresh) == 0


def test_unusable_replies_and_overlong_cases_are_counted_not_fatal(store: Store) -> None:
    junk = ScriptedBackend(["this is not json at all"], model_sha256="j" * 64)
    short = oracle_backend("ddxplus8", tag="s", too_long=600)
    summary = run_clinical(store, _spec(mode="json", scenarios=("S1",)), backends=[junk, short])
    metrics = store.metrics(summary.run_id)
    err = metrics[(metrics["metric"] == "parse_error_rate")].set_index("method")["value"]
    assert (err > 0).all()
    errors = store.con.execute("SELECT error FROM agent_turns WHERE run_id = ? AND error IS NOT NULL",
                               [summary.run_id]).fetchall()
    assert any("unparseable reply" in e[0] for e in errors)
    assert any("exceeds the context" in e[0] for e in errors)


def test_stored_llm_run_replays_to_its_outcomes(store: Store) -> None:
    backends = [oracle_backend("ddxplus8", tag="a"), oracle_backend("ddxplus8", anchor=GERD, tag="b")]
    run = run_clinical(store, _spec(), backends=backends).run_id
    replay = load_run_replay(store, run, "dcem")
    assert replay.cells[0].probabilities is not None
    out = rescore(replay)
    stored = store.outcomes(run, "dcem").set_index("case_id")
    frame = out.outcomes.set_index("case_id")
    assert (frame.loc[stored.index, "action"] == stored["action"]).all()
    moved = rescore(replay, config=replay.cells[0].config.with_changes(eps_safe=0.0, m_safe=5.0),
                    per_cell_thresholds=False)
    assert moved.metrics["certified_rate"] == 0.0


@pytest.mark.parametrize("bad, field", [({"dataset": "nope"}, "dataset"), ({"scenarios": ("S9",)}, "scenario"),
                                        ({"n_test": 0}, "n_test"), ({"agents": ("a",)}, "agents"),
                                        ({"mode": "chat"}, "mode")])
def test_spec_refuses_bad_settings_with_the_field(bad: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as exc:
        _spec(**bad)
    assert exc.value.field == field


def test_stop_when_decided_keeps_the_outcomes_and_asks_less(store: Store) -> None:
    def members() -> list[ScriptedBackend]:
        return [oracle_backend("ddxplus8", tag="a"), oracle_backend("ddxplus8", anchor=GERD, tag="b")]

    fixed_backends, stop_backends = members(), members()
    spec = _spec(stop_when_decided=True)
    assert spec.run_id() != _spec().run_id() and "stop_when_decided" not in _spec().to_dict()
    ticks: list[tuple[int, int]] = []
    stopped = run_clinical(store, spec, backends=stop_backends, progress=lambda d, t, s: ticks.append((d, t))).run_id
    assert ticks[-1][0] == ticks[-1][1]  # skipped turns still count on the progress bar
    fixed = run_clinical(store, _spec(), backends=fixed_backends).run_id
    # the fixed horizon still had to ask the rounds after the outcomes (the rest came from the call log)
    assert _calls(stop_backends) > 0 and _calls(fixed_backends) > 0
    turns = store.con.execute("SELECT method, case_id, count(*) AS n FROM agent_turns WHERE run_id = ? "
                              "GROUP BY ALL", [stopped]).df()
    for method in ("dcem", "dcem_noesc"):
        a = store.outcomes(fixed, method).set_index("case_id").sort_index()
        b = store.outcomes(stopped, method).set_index("case_id").sort_index()
        assert (a[["action", "rounds", "decision"]].values == b[["action", "rounds", "decision"]].values).all()
        asked = turns[turns["method"] == method].set_index("case_id")["n"]
        assert (asked.loc[b.index] == 2 * b["rounds"]).all()  # two agents, each round up to the outcome
    assert (store.outcomes(stopped, "dcem")["rounds"] < 4).any()
    info = json.loads(store.con.execute("SELECT info_json FROM cells WHERE run_id = ?", [stopped]).fetchone()[0])
    assert info["stop_when_decided"] is True
    with pytest.raises(ConfigError) as exc:
        _spec(stop_when_decided="yes")
    assert exc.value.field == "stop_when_decided"


def test_in_process_models_are_built_with_paragraph_blocks(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner's own backends evaluate in paragraph-aligned blocks (dcem_clinical.run.SPLIT)."""
    import dcem_clinical.run as run_mod

    asked: list[tuple[str, str]] = []

    def fake_make_backend(key: str, **kw: object) -> ScriptedBackend:
        asked.append((key, str(kw.get("split"))))
        return oracle_backend("ddxplus8", tag=key)

    monkeypatch.setattr(run_mod, "make_backend", fake_make_backend)
    monkeypatch.setattr(run_mod, "check_model_keys", lambda keys: None)  # the fake keys name no registry model
    run_clinical(store, _spec(scenarios=("S1",)))
    assert asked and all(split == run_mod.SPLIT == "paragraph" for _, split in asked)
