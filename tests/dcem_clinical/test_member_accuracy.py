"""The accuracy table of docs/clinical_members.md is what scripts/member_accuracy.py
regenerates (issue 51, item 17): its DDXPlus-8 statistical rows refit from the data, and the
trained diagnostician's symptoms view and "one right" read from the shipped trio export.
(The MedQA-Tri rows are printed by the same script; its run is slower, so the test leaves
them out.)"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from dcem_clinical.member_accuracy import one_right, stat_accuracy, table_row, trio_member_accuracy

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "clinical_members.md"


def _doc_rows() -> list[str]:
    return [line for line in DOC.read_text(encoding="utf-8").splitlines() if line.startswith("| DDXPlus-8, ")]


@pytest.mark.parametrize("kind, n_cal, n_test, views", [
    ("nb-evidence", 80, 160, ("all", "complaint", "history", "symptoms")),
    ("nb-evidence", 100, 100, ("all", "complaint", "history", "symptoms")),
    ("lr-evidence", 100, 100, ("all", "complaint", "history")),
])
def test_a_statistical_row_is_what_the_script_regenerates(kind: str, n_cal: int, n_test: int,
                                                          views: tuple[str, ...]) -> None:
    got = {v: stat_accuracy("ddxplus8", kind, v, n_cal, n_test) for v in views}
    row = table_row(f"DDXPlus-8, {kind}", n_cal, n_test, list(got.values()),
                    [("complaint + history", got["complaint"], got["history"])])
    assert row in _doc_rows()


def test_the_diagnostician_rows_symptoms_view_comes_from_the_shipped_trio() -> None:
    llm = trio_member_accuracy(ROOT / "data" / "results" / "dcem_clinical_trio", 2, 100)
    assert llm.view == "symptoms" and len(llm.right) == 100
    complaint, history = (stat_accuracy("ddxplus8", "nb-evidence", v, 100, 100) for v in ("complaint", "history"))
    row = next(r for r in _doc_rows() if "ddxplus8-grpo" in r)
    assert f"symptoms {llm.cal:.3f} / {llm.test:.3f}" in row
    assert row.endswith(f"| its symptoms + nb-evidence complaint {one_right(llm, complaint):.3f}, its symptoms + "
                        f"nb-evidence history {one_right(llm, history):.3f} |")


def test_the_doc_names_the_command_for_every_row() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "python scripts/member_accuracy.py" in text
    assert re.search(r"--agents smollm2-135m\+lora:ddxplus8-grpo@complaint,", text)  # the model-run rows
