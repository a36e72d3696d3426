"""The shipped run on the example case file (REPRODUCTION.md, "Your own cases").

Its export carries the cases, so the walkthrough opens a case from the export alone, and
the accuracies beside chance in REPRODUCTION.md are what the report prints from it.
"""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from clinical.case_file import CaseFileOptions, read_case_file
from dcem.analysis.reproduction import reproduction_block
from dcem.store.database import Store
from dcem.store.demo import DEMO_EXPORTS, OWN_CASES_EXPORT, ensure_demo
from dcem.store.run_export import load_run_export
from dcem_clinical.cli import main as clinical_main
from studio.views.walkthrough_view import load_walk_case, round_view

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "data" / "examples" / "abdominal_pain_cases.jsonl"
HIGH = ("Appendicitis", "Ectopic_pregnancy")


def test_the_export_is_a_run_on_the_shipped_example_file_with_its_loss() -> None:
    export = load_run_export(OWN_CASES_EXPORT)
    assert OWN_CASES_EXPORT in DEMO_EXPORTS and len(export.run_ids) == 1
    spec = export.run(export.run_ids[0])["spec"]
    ds = read_case_file(EXAMPLE, CaseFileOptions(high_risk=HIGH))
    assert spec["case_file"]["sha256"] == ds.sha256 and tuple(spec["case_file"]["labels"]) == ds.labels
    assert spec["agents"] == ["smollm2-135m", "stat:tfidf-lr"]
    assert json.loads(json.dumps(spec["case_file"]["loss"])) == ds.loss.tolist()


def test_the_walkthrough_opens_a_case_of_the_export_with_its_text_and_loss(tmp_path: Path) -> None:
    ds = read_case_file(EXAMPLE, CaseFileOptions(high_risk=HIGH))
    texts = {c.text for c in ds.cases}
    with Store(tmp_path / "s.duckdb") as store:
        (run_id,) = ensure_demo(store, (OWN_CASES_EXPORT,))
        outcomes = store.outcomes(run_id, "dcem")
        assert len(outcomes) == 160
        for case_id in outcomes["case_id"].iloc[:3]:
            walk = load_walk_case(store, run_id, str(case_id), "dcem", llm=True)
            assert walk.text in texts and walk.trace.labels == ds.labels
            assert walk.loss is not None and walk.loss.tolist() == ds.loss.tolist()
            assert list(walk.agents["model"]) == ["SmolLM2-135M-Instruct.Q4_1.gguf", "stat:tfidf-lr"]
            assert round_view(walk, 1, method="dcem", cases=outcomes).metrics


def test_reproduction_shows_the_accuracies_beside_chance_the_report_prints() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert clinical_main(["report", "--from-export", str(OWN_CASES_EXPORT)]) == 0
    printed = out.getvalue()
    beside = printed[printed.index("Beside chance"):].strip()
    block = reproduction_block((ROOT / "REPRODUCTION.md").read_text(encoding="utf-8"), "dcem-clinical-own-cases-chance")
    assert block.strip() == f"```\n{beside}\n```"
    assert "chance (1/K = 0.200)" in beside and "Ectopic_pregnancy" in beside
