"""Statistical members that take a role, hear their peers and answer a challenge."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from clinical.datasets import load_dataset
from dcem.core.config import MediatorConfig
from dcem.core.deliberation import SteerRequest
from common.errors import ConfigError
from dcem.store.database import Store
from dcem_clinical.panel import LlmPanel
from dcem_clinical.roles import ANCHOR, AREAS, NEUTRAL, Leaning, scenario_leanings, scenario_roles
from dcem_clinical.run import ClinicalSpec, run_clinical
from dcem_clinical.stat_agent import StatAgent, StatMember, StatTurn, fit_stat_agent
from dcem_clinical.stat_dialogue import (StatDialogue, answer_vector, challenge_shift, fit_temperature,
                                         leaned_scores, tempered)
from runtime.call_log import CallContext

ROOT = Path(__file__).resolve().parents[2]
URTI, GERD, PE = 4, 6, 1
CFG = StatDialogue()


def test_leanings_follow_the_roles() -> None:
    s2 = scenario_leanings("ddxplus8", "S2", 3)
    assert [x.kind for x in s2] == [NEUTRAL, NEUTRAL, ANCHOR] and s2[2].labels == (URTI, GERD)
    assert "walk-in clinic" in scenario_roles("ddxplus8", "S2", 3)[2]
    assert all(x == Leaning(ANCHOR, (3,)) for x in scenario_leanings("medqa-tri", "S3b", 2))
    a, b = scenario_leanings("ddxplus8", "S3a")
    assert a.kind == b.kind == AREAS and set(a.labels) | set(b.labels) == set(range(8))
    assert not set(a.labels) & set(b.labels)
    three = scenario_leanings("medqa-tri", "S3a", 3)
    assert sorted(i for x in three for i in x.labels) == list(range(7))
    assert scenario_leanings("ddxplus8", "S1", 4) == (Leaning(),) * 4


def test_an_anchored_member_leans_to_its_anchor_unless_its_evidence_is_strong() -> None:
    weak = np.array([0.05, 0.30, 0.05, 0.05, 0.20, 0.15, 0.10, 0.10])  # PE ahead of URTI by 1.5x
    strong = np.array([0.01, 0.90, 0.01, 0.01, 0.03, 0.02, 0.01, 0.01])  # PE ahead by 30x
    anchored = Leaning(ANCHOR, (URTI, GERD))
    assert np.argmax(leaned_scores(weak, Leaning(), CFG)) == PE
    assert np.argmax(leaned_scores(weak, anchored, CFG)) == URTI
    assert np.argmax(leaned_scores(strong, anchored, CFG)) == PE
    assert np.argmax(leaned_scores(weak, anchored, StatDialogue(anchor=0.0))) == PE


def test_a_member_outside_its_areas_can_barely_tell_labels_apart() -> None:
    p = np.array([0.02, 0.02, 0.02, 0.02, 0.60, 0.10, 0.12, 0.10])
    sharp = np.exp(leaned_scores(p, Leaning(AREAS, (0, 1, 2, 3)), CFG))
    assert np.allclose(sharp[:4], p[:4]) and np.isclose(sharp.sum(), 1.0)
    spread = sharp[4:].max() - sharp[4:].min()
    assert spread == pytest.approx(0.25 * (p[4:].max() - p[4:].min()))


def test_peers_pull_and_a_challenge_moves_the_contrast_toward_the_reference() -> None:
    scores = np.log(np.array([0.1, 0.2, 0.1, 0.1, 0.3, 0.1, 0.05, 0.05]))
    alone = answer_vector(scores, np.zeros(8), (), 2, CFG)
    heard = answer_vector(scores, np.zeros(8), (PE,), 2, CFG)
    assert np.argmax(alone) == URTI and np.argmax(heard) == PE  # one peer weighs a factor e
    own = alone
    reference = np.array([0.02, 0.8, 0.02, 0.02, 0.05, 0.03, 0.03, 0.03])
    shift = challenge_shift(own, reference, URTI, PE, CFG)
    after = answer_vector(scores, shift, (), 2, CFG)
    assert np.log(after[PE] / after[URTI]) == pytest.approx(np.log(reference[PE] / reference[URTI]))
    assert np.argmax(after) == PE and shift.sum() == pytest.approx(0.0)
    assert not challenge_shift(own, reference, URTI, PE, StatDialogue(compliance=0.0)).any()
    agrees = np.array([0.02, 0.05, 0.02, 0.02, 0.8, 0.03, 0.03, 0.03])  # the reference favours URTI more
    assert np.argmax(answer_vector(scores, challenge_shift(own, agrees, URTI, PE, CFG), (), 2, CFG)) == URTI


@pytest.mark.parametrize("bad", [dict(anchor=-1.0), dict(kappa=float("nan")), dict(compliance=1.5),
                                 dict(residual=-0.1), dict(cues=99), dict(anchor=True)])
def test_bad_dialogue_settings_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        StatDialogue(**bad)  # type: ignore[arg-type]


def _members(store: Store, dialogue: StatDialogue | None) -> tuple[list[StatAgent], list[str], list[str], list[int]]:
    """An anchored partial-view member (complaint only) and a neutral whole-case member, fit on seed 0's CAL."""
    data = load_dataset("ddxplus8")
    cal, test, _ = data.split(0)
    cal_ids, test_ids = [f"cal-{c.source_id}" for c in cal], [f"test-{c.source_id}" for c in test]
    leanings = (Leaning(ANCHOR, (URTI, GERD)), Leaning())
    agents = [fit_stat_agent(member, data, store, name=name, role="", cal=cal, cal_ids=cal_ids, others=test,
                             other_ids=test_ids, rng=np.random.default_rng(0), leaning=lean, dialogue=dialogue)
              for member, name, lean in zip((StatMember("nb-evidence", "complaint"), StatMember("nb-evidence")),
                                            ("Agent A", "Agent B"), leanings)]
    return agents, test_ids, [c.text for c in test], [c.label for c in test]


def test_a_challenged_member_revises_toward_the_dangerous_miss(tmp_path: Path) -> None:
    """The seed's S2: the anchored member says URTI or GERD on a high-risk case that its
    neutral peer reads right; challenged on that miss, it moves to it."""
    with Store(tmp_path / "s.duckdb") as store:
        agents, ids, texts, truth = _members(store, CFG)
        panel = LlmPanel(agents, ids, texts)
        first = panel.report(1)
        said = first.argmax(-1)
        missed = [i for i in range(len(ids)) if truth[i] < 4 and said[i, 0] in (URTI, GERD) and said[i, 1] == truth[i]]
        assert len(missed) >= 3, "the anchored partial member misses high-risk cases its peer gets right"
        m = len(missed)
        panel.steer(SteerRequest(t=1, cases=np.array(missed), agent=np.zeros(m, dtype=np.int64),
                                 current=said[missed, 0], alternative=np.array([truth[i] for i in missed]),
                                 agent_risk=np.tile([1.0, 0.1], (m, 1))))
        second = panel.report(2).argmax(-1)
        assert all(second[i, 0] == truth[i] for i in missed)
        listed = [panel.cues[(i, 1)] for i in missed]  # the evidence codes of its own view that separate the two
        assert sum(map(bool, listed)) >= m / 2, listed  # none when its complaint code was never seen on CAL
        data = load_dataset("ddxplus8")
        assert all(c.endswith(f"(for {data.labels[said[i, 0]]})") or c.endswith(f"(for {data.labels[truth[i]]})")
                   for i, cues in zip(missed, listed) for c in cues)
        assert all("?" in c and "E_" not in c for cues in listed for c in cues)  # the evidence in words
        fixed_agents, *_ = _members(store, None)
        fixed = LlmPanel(fixed_agents, ids, texts)
        before = fixed.report(1).argmax(-1)
        fixed.steer(SteerRequest(t=1, cases=np.array(missed), agent=np.zeros(m, dtype=np.int64),
                                 current=said[missed, 0], alternative=np.array([truth[i] for i in missed]),
                                 agent_risk=np.tile([1.0, 0.1], (m, 1))))
        again = fixed.report(2).argmax(-1)
        assert (again[:, 0] == before[:, 0]).all()  # a fixed member never revises


def test_turns_hear_peers_and_are_keyed_by_what_they_heard(tmp_path: Path) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        agents, ids, _, _ = _members(store, CFG)
        a = agents[0]
        ctx = CallContext(None, ids[0], 0, 1)
        alone, _ = a.classify("", context=ctx)
        heard, hit = a.classify("", context=ctx, turn=StatTurn(peers=(PE,)))
        assert not hit and a.last_key is not None
        assert heard.probabilities[PE] > alone.probabilities[PE]
        again, hit = a.classify("", context=ctx, turn=StatTurn(peers=(PE,)))
        assert hit and np.allclose(again.probabilities, heard.probabilities)
        assert a.info()["view"] == "complaint" and a.info()["leaning"] == {"kind": ANCHOR, "labels": [URTI, GERD]}


def _spec(**kw: object) -> ClinicalSpec:
    base = dict(dataset="ddxplus8", scenarios=("S2",), seeds=(0,), n_cal=40, n_test=24,
                agents=("stat@complaint", "stat@history"), base_config=MediatorConfig(prior="empirical", t_max=3),
                free_rounds=3)
    base.update(kw)
    return ClinicalSpec(**base)  # type: ignore[arg-type]


def test_run_ids_keep_earlier_runs_and_name_the_dialogue() -> None:
    """A fixed statistical member keeps the shipped run ids; LLM panels never carry the setting."""
    manifest = json.loads((ROOT / "data/results/dcem_clinical_mixed/manifest.json").read_text())
    shipped = {r["run_id"] for r in manifest["runs"]}
    for dataset in ("ddxplus8", "medqa-tri"):
        spec = ClinicalSpec(dataset=dataset, scenarios=("S1", "S2", "S3a", "S3b"), seeds=(0, 1), n_cal=40,
                            n_test=40, agents=("stat", "smollm2-135m"), stop_when_decided=True, stat_dialogue=None)
        assert spec.run_id() in shipped
        assert ClinicalSpec(**{**spec.__dict__, "stat_dialogue": StatDialogue()}).run_id() not in shipped
    llm = ClinicalSpec(agents=("smollm2-135m", "gemma3-270m"))
    assert llm.stat_dialogue is None and "stat_dialogue" not in llm.to_dict()
    assert _spec().to_dict()["stat_dialogue"] == StatDialogue().to_dict()


def test_a_responsive_panel_deliberates(tmp_path: Path) -> None:
    """Two partial-view members under D-CEM: answers change across rounds, a steer lists
    cues, and the anchored member of S2 answers URTI or GERD more often than in S1."""
    with Store(tmp_path / "s.duckdb") as store:
        summary = run_clinical(store, _spec(scenarios=("S1", "S2")))
        assert summary.complete
        turns = store.con.execute("SELECT split_part(case_id, '-', 1) AS scenario, case_id, method, round, agent, "
                                  "label FROM agent_turns WHERE run_id = ? AND case_id LIKE '%-test-%'",
                                  [summary.run_id]).df()
        free = turns[turns["method"] == "free"].pivot_table(index=["scenario", "case_id", "agent"], columns="round",
                                                             values="label")
        assert (free[1] != free[3]).any(), "hearing the other member changes some answers"
        first = turns[(turns["round"] == 1) & (turns["method"] == "dcem") & (turns["agent"] == 1)]
        share = first.groupby("scenario")["label"].apply(lambda s: float(s.isin([URTI, GERD]).mean()))
        assert share["S2"] > share["S1"]
        info = json.loads(store.con.execute("SELECT info_json FROM cells WHERE run_id = ? AND scenario = 'S2'",
                                            [summary.run_id]).fetchone()[0])
        assert info["agents"][1]["leaning"]["kind"] == ANCHOR and info["agents"][0]["view"] == "complaint"


def test_temperature_scaling_tames_an_overconfident_member() -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, size=400)
    said = np.where(rng.random(400) < 0.6, y, rng.integers(0, 4, size=400))  # right 70 % of the time
    sure = np.full((400, 4), 0.01)
    sure[np.arange(400), said] = 0.97  # but always 97 % sure
    t = fit_temperature(sure, y)
    assert t > 2.0
    calibrated = tempered(sure, t)
    assert np.allclose(calibrated.sum(axis=1), 1.0) and 0.6 < calibrated.max(axis=1).mean() < 0.8
    assert fit_temperature(sure, []) == 1.0
    assert np.allclose(tempered(sure, 1.0), sure / sure.sum(axis=1, keepdims=True))


def test_a_responsive_run_exports_and_a_bad_dialogue_in_a_manifest_is_refused(tmp_path: Path) -> None:
    from dcem.store.run_export import load_run_export, write_run_export

    with Store(tmp_path / "s.duckdb") as store:
        summary = run_clinical(store, _spec(n_cal=24, n_test=8))
        write_run_export(store, [summary.run_id], tmp_path / "out", command="python -m dcem_clinical run ...",
                         models=[])
    export = load_run_export(tmp_path / "out")
    assert export.run(summary.run_id)["spec"]["stat_dialogue"]["anchor"] == 3.0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    manifest["runs"][0]["spec"]["stat_dialogue"] = {"anchor": "strong"}
    (tmp_path / "out" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(Exception, match="stat_dialogue"):
        load_run_export(tmp_path / "out")
