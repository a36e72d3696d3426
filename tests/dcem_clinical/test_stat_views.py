"""Views: statistical members that read part of a case (real shipped data)."""
from __future__ import annotations

import numpy as np
import pytest

from clinical.datasets import load_dataset
from clinical.ddxplus import load_ddxplus8
from common.errors import ConfigError
from dcem_clinical.run import ClinicalSpec
from dcem_clinical.stat_agent import StatMember, case_documents, stat_member
from dcem_clinical.stat_model import fit_stat_model
from dcem_clinical.stat_views import VIEWS, evidence_view, feature_words, is_antecedent, view_text


def test_member_keys_name_kind_and_view() -> None:
    assert stat_member("stat@complaint", "ddxplus8") == StatMember("nb-evidence", "complaint")
    assert stat_member("stat:lr-evidence@history", "ddxplus8") == StatMember("lr-evidence", "history")
    assert stat_member("stat@findings", "medqa-tri") == StatMember("tfidf-lr", "findings")
    assert stat_member("stat", "ddxplus8") == StatMember("nb-evidence")
    assert StatMember("nb-evidence", "history").key == "stat:nb-evidence@history"
    assert StatMember("nb-evidence").key == "stat:nb-evidence"  # the key of earlier runs


@pytest.mark.parametrize("key, dataset, needle", [
    ("stat@findings", "ddxplus8", "complaint, history, symptoms"),
    ("stat@complaint", "medqa-tri", "history, findings, vignette, answer"),
    ("stat:tfidf-lr@history", "ddxplus8", "evidence model"),
])
def test_unknown_views_are_refused_with_the_valid_ones(key: str, dataset: str, needle: str) -> None:
    with pytest.raises(ConfigError) as exc:
        stat_member(key, dataset)
    assert exc.value.field == "agents" and needle in str(exc.value)
    with pytest.raises(ConfigError):
        ClinicalSpec(dataset=dataset, agents=(key, "stat"))


def test_ddxplus_views_split_the_evidence() -> None:
    case = next(c for c in load_ddxplus8() if any(is_antecedent(e) for e in c.evidences))
    history = evidence_view("history", case.evidences, case.initial_evidence)
    symptoms = evidence_view("symptoms", case.evidences, case.initial_evidence)
    assert history and symptoms and not set(history) & set(symptoms)
    assert sorted(history + symptoms) == sorted(case.evidences)
    assert evidence_view("complaint", case.evidences, case.initial_evidence) == [case.initial_evidence]
    assert evidence_view("all", case.evidences, case.initial_evidence) == list(case.evidences)


def test_medqa_views_split_the_vignette() -> None:
    case = load_dataset("medqa-tri").cases[0]
    stem, answer = case.text.split("\n\nCanonical answer: ")
    history, findings = view_text("history", case), view_text("findings", case)
    assert history and findings and stem.startswith(history) and findings in stem
    assert "temperature" not in history.lower() and view_text("answer", case) == answer.strip()
    assert view_text("vignette", case) == stem and view_text("all", case) == case.text
    assert answer.strip() not in view_text("vignette", case)


def _oof(dataset: str, kind: str, view: str) -> tuple[float, np.ndarray]:
    data = load_dataset(dataset)
    cal, _, _ = data.split(0)
    truth = np.array([c.label for c in cal])
    fitted = fit_stat_model(kind, [c.source_id for c in cal], case_documents(kind, cal, view), truth,
                            len(data.labels), np.random.default_rng(0))
    return fitted.oof_accuracy, fitted.oof.argmax(1) == truth


@pytest.mark.parametrize("dataset, kind, views", [
    ("ddxplus8", "nb-evidence", ("complaint", "history")),
    ("medqa-tri", "tfidf-lr", ("history", "findings")),
])
def test_partial_views_know_part_of_the_case(dataset: str, kind: str, views: tuple[str, str]) -> None:
    """Each partial member is clearly above chance and clearly below 1 on CAL (out-of-fold),
    and their errors differ: often exactly one of the two is right."""
    chance = 1.0 / len(load_dataset(dataset).labels)
    (acc_a, right_a), (acc_b, right_b) = (_oof(dataset, kind, v) for v in views)
    for acc in (acc_a, acc_b):
        assert chance + 0.15 < acc < 0.92
    assert float(np.mean(right_a != right_b)) > 0.2
    assert set(views) <= set(VIEWS[dataset])


def test_evidence_codes_read_as_words() -> None:
    assert feature_words("E_55_@_V_88") == "Do you feel pain somewhere? left iliac fossa"
    assert feature_words("E_55") == "Do you feel pain somewhere?"
    assert feature_words("fever") == "fever" and feature_words("E_nope") == "E_nope"


def test_language_model_members_read_their_view(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A scripted model member with a view is prompted with that part of each case only."""
    from dcem.core.config import MediatorConfig
    from dcem.store.database import Store
    from dcem_clinical.run import run_clinical
    from dcem_clinical.stat_views import case_view_text, split_view
    from tests.dcem_clinical.clinical_fakes import oracle_backend

    assert split_view("smollm2-135m@history", "ddxplus8") == ("smollm2-135m", "history")
    assert split_view("smollm2-135m", "ddxplus8") == ("smollm2-135m", "all")
    with pytest.raises(ConfigError):
        ClinicalSpec(dataset="ddxplus8", agents=("smollm2-135m@findings", "stat"))
    spec = ClinicalSpec(dataset="ddxplus8", scenarios=("S1",), seeds=(0,), n_cal=8, n_test=6,
                        agents=("fake-a@complaint", "stat@history"), free_rounds=2,
                        base_config=MediatorConfig(prior="empirical", t_max=2))
    with Store(tmp_path / "s.duckdb") as store:
        summary = run_clinical(store, spec, backends=[oracle_backend("ddxplus8", tag="a"),
                                                      StatMember("nb-evidence", "history")])
        prompts = [m for (m,) in store.con.execute(
            "SELECT messages_json FROM llm_calls WHERE model = 'oracle-a' AND purpose = 'classify'").fetchall()]
        info = store.con.execute("SELECT info_json FROM cells WHERE run_id = ?", [summary.run_id]).fetchone()[0]
    _, test, _ = load_dataset("ddxplus8").split(0, 8, 6)
    complaint = case_view_text("ddxplus8", "complaint", test[0])
    assert any(complaint in p for p in prompts) and not any(test[0].text in p for p in prompts)
    assert '"views": ["complaint", "history"]' in info
