"""A panel on a researcher's case file: the run stores the file's cases, labels and loss
and its sha256; the same command resumes; a changed file is refused; the roles are built
from the file's own labels; views work for statistical and language-model members."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinical.case_file import CaseFileOptions, read_case_file
from clinical.datasets import use_dataset
from common.errors import ConfigError
from dcem.core.config import MediatorConfig
from dcem.store.case_reads import case_text
from dcem.store.database import Store
from dcem_clinical.roles import scenario_leanings, scenario_roles
from dcem_clinical.run import ClinicalSpec, run_clinical
from dcem_clinical.stat_agent import stat_member
from dcem_clinical.stat_views import case_view_text
from dcem.analysis.run_replay import load_run_replay
from dcem.analysis.whatif import rescore
from studio.views.walkthrough_view import load_walk_case, round_view
from tests.dcem_clinical.clinical_fakes import oracle_backend

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "examples" / "abdominal_pain_cases.jsonl"
HIGH = ("Appendicitis", "Ectopic_pregnancy")


def _file(tmp_path: Path, lines: int | None = None, name: str = "abdo.jsonl") -> Path:
    rows = EXAMPLE.read_text(encoding="utf-8").splitlines()
    path = tmp_path / name
    path.write_text("\n".join(rows[:lines]) + "\n", encoding="utf-8")
    return path


def _spec(name: str, **kw: object) -> ClinicalSpec:
    base = dict(dataset=name, scenarios=("S2",), seeds=(0,), n_cal=20, n_test=15,
                agents=("fake-a", "stat:tfidf-lr@history"), base_config=MediatorConfig(prior="empirical", t_max=3),
                free_rounds=2)
    base.update(kw)
    return ClinicalSpec(**base)  # type: ignore[arg-type]


def test_a_run_on_a_case_file_stores_its_cases_labels_loss_and_sha256_and_resumes(tmp_path: Path) -> None:
    ds = use_dataset(read_case_file(_file(tmp_path), CaseFileOptions(high_risk=HIGH, l_high=4.0)))
    spec = _spec(ds.name)
    members = [oracle_backend(ds.name), stat_member("stat:tfidf-lr@history", ds.name)]
    with Store(tmp_path / "s.duckdb") as store:
        summary = run_clinical(store, spec, backends=members)
        assert summary.complete and summary.computed == 1
        cell = store.load_cell(summary.run_id, "S2", 0)
        assert cell.panel.labels == ds.labels and cell.panel.loss.tolist() == ds.loss.tolist()
        assert float(cell.panel.loss[1, 0]) == 4.0  # missing Appendicitis costs l_high
        stored = json.loads(store.runs()["spec_json"].iloc[0])["case_file"]
        assert stored == {"file": "abdo.jsonl", "sha256": ds.sha256, "labels": list(ds.labels), "high_risk": [0, 2],
                          "loss": ds.loss.tolist(), "views": ["exam", "history"]}
        outcomes = store.outcomes(summary.run_id, "dcem")
        by_id = {c.source_id: c for c in ds.cases}
        texts = [case_text(store, summary.run_id, cid) for cid in outcomes["case_id"]]
        assert len(texts) == 15 and all(t in {c.text for c in by_id.values()} for t in texts)
        again = run_clinical(store, spec, backends=members)
        assert again.resumed and again.computed == 0
        # the walkthrough and the what-if read the run from the store alone
        first = str(outcomes["case_id"].iloc[0])
        walk = load_walk_case(store, summary.run_id, first, "dcem", llm=True)
        assert walk.trace.labels == ds.labels and walk.text == texts[0] and walk.loss is not None
        assert round_view(walk, 1, method="dcem", cases=outcomes).metrics
        whatif = rescore(load_run_replay(store, summary.run_id), loss=ds.loss * 2)
        assert len(whatif.outcomes) == 15 and set(whatif.outcomes["truth_label"]) <= set(ds.labels)


def test_a_changed_file_under_the_same_name_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    path = _file(tmp_path)
    ds = use_dataset(read_case_file(path, CaseFileOptions(high_risk=HIGH)))
    members = [oracle_backend(ds.name), stat_member("stat:tfidf-lr@history", ds.name)]
    with Store(tmp_path / "s.duckdb") as store:
        run_id = run_clinical(store, _spec(ds.name, seeds=(0,)), backends=members).run_id
        rows = path.read_text(encoding="utf-8").splitlines()
        rows[0] = rows[0].replace('"text": "', '"text": "Re-read. ', 1)
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
        changed = use_dataset(read_case_file(path, CaseFileOptions(high_risk=HIGH)))
        spec0 = _spec(changed.name, seeds=(0,))
        assert spec0.run_id() == run_id and changed.sha256 != ds.sha256
        with pytest.raises(ConfigError, match=r"abdo.jsonl changed since run .* started \(sha256 .* stored, .* now\)"):
            run_clinical(store, spec0, backends=members)
        assert len(store.runs()) == 1 and store.done_cells(run_id) == {("S2", 0)}


def test_the_roles_come_from_the_files_own_labels() -> None:
    ds = use_dataset(read_case_file(EXAMPLE, CaseFileOptions(high_risk=HIGH)))
    s2 = scenario_roles(ds.name, "S2")
    assert "Gastroenteritis" in s2[1] and "settle on Gastroenteritis" in s2[1]  # the most frequent benign class
    s3a = scenario_roles(ds.name, "S3a")
    assert "sharp on Appendicitis and Ectopic pregnancy" in s3a[0] and "unsure about Appendicitis" in s3a[1]
    text = " ".join(r for s in ("S1", "S2", "S3a", "S3b") for n in (2, 4) for r in scenario_roles(ds.name, s, n))
    for ddxplus_word in ("URTI", "GERD", "walk-in clinic", "Gastroenterology", "cardiology"):
        assert ddxplus_word not in text
    assert scenario_leanings(ds.name, "S2")[1].labels == (3,)
    assert scenario_leanings(ds.name, "S3a")[0].labels == (0, 2)


def test_members_read_the_files_views_and_a_view_some_cases_lack_is_refused(tmp_path: Path) -> None:
    ds = use_dataset(read_case_file(EXAMPLE))
    case = ds.cases[0]
    assert case_view_text(ds.name, "exam", case) == case.view("exam") != case.text
    spec = _spec(ds.name, agents=("smollm2-135m@exam", "stat:tfidf-lr@history"))
    assert spec.member_views == ("exam", "history")
    with pytest.raises(ConfigError, match="unknown view 'labs' for file:abdominal_pain_cases.jsonl cases; valid: "
                                          "all, exam, history"):
        _spec(ds.name, agents=("smollm2-135m@labs", "stat"))
    rows = [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()]
    del rows[5]["views"]["exam"]
    path = tmp_path / "partial.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    partial = use_dataset(read_case_file(path))
    with pytest.raises(ConfigError, match="view 'exam' is missing from 1 of the 275 cases of partial.jsonl "
                                          r"\(first: id 'abd-006'\)"):
        _spec(partial.name, agents=("smollm2-135m@exam", "stat"))
    with pytest.raises(ConfigError, match="cannot read file:partial.jsonl cases"):
        _spec(partial.name, agents=("stat:nb-evidence", "stat"))
