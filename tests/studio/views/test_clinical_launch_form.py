"""The Experiments page's clinical launch form: an uploaded case file read with the
command line's checks, and the fields turned into a spec or each refusal's message."""
from __future__ import annotations

import json
from pathlib import Path

from studio.views.clinical_launch_form import read_case_upload, read_clinical_form

EXAMPLE = Path(__file__).resolve().parents[3] / "data" / "examples" / "abdominal_pain_cases.jsonl"


def test_an_upload_is_read_with_its_options_and_summarised() -> None:
    got = read_case_upload(EXAMPLE.read_bytes(), "abdo.jsonl", high_risk=["Appendicitis"], l_high=3.0)
    assert got.error is None and got.dataset is not None and got.dataset.name == "file:abdo.jsonl"
    assert got.dataset.loss[1, 0] == 3.0
    text = got.summary()
    assert text.startswith("275 cases in 5 classes (Appendicitis 50, Biliary_colic 55")
    assert "views: exam, history" in text and "high-risk: Appendicitis" in text


def test_a_bad_upload_gives_the_command_lines_message_and_no_dataset() -> None:
    bad = EXAMPLE.read_bytes().splitlines()
    data = b"\n".join(bad[:3] + [b"{not json"] + bad[3:])
    got = read_case_upload(data, "abdo.jsonl")
    assert got.dataset is None and got.error == ("case_file: abdo.jsonl line 4 is not JSON (Expecting property name "
                                                 "enclosed in double quotes at column 2)")
    assert read_case_upload(None, None).error.startswith("Upload a .jsonl or .csv case file")
    assert "label 'Appendicitis' is not in --labels" in read_case_upload(EXAMPLE.read_bytes(), "a.jsonl",
                                                                         labels="Renal_colic, Gastroenteritis").error


def test_the_fields_make_a_spec_on_the_uploaded_file_or_say_what_is_wrong() -> None:
    ds = read_case_upload(EXAMPLE.read_bytes(), "abdo.jsonl").dataset
    assert ds is not None
    form = read_clinical_form(ds.name, "stat:tfidf-lr@history, smollm2-135m@exam", ["S1", "S2"], "2", "20", "30", "4")
    assert form.ok and form.spec is not None
    assert form.spec.dataset == "file:abdo.jsonl" and form.spec.seeds == (0, 1) and form.spec.n_cal == 20
    assert form.spec.case_file is not None and form.spec.case_file.sha256 == ds.sha256
    assert form.spec.base_config.t_max == 4 and form.spec.member_views == ("history", "exam")
    bad = read_clinical_form(ds.name, "stat", [], "0", "3", "x", "4")
    assert not bad.ok and len(bad.errors) == 4
    assert any(e.startswith("Members: give 2 to 8 members") for e in bad.errors)
    assert any(e.startswith("Scenarios:") for e in bad.errors)
    few = read_clinical_form(ds.name, "stat, stat", ["S1"], "1", "3", "", "4")
    assert few.errors == ("CAL cases: the dataset has 5 classes; give 5 or more (one of each class at least).",)
    view = read_clinical_form(ds.name, "stat@labs, stat", ["S1"], "1", "", "", "4")
    assert "unknown view 'labs'" in view.errors[0]
    gone = read_clinical_form("file:never-uploaded.jsonl", "stat, stat", ["S1"], "1")
    assert gone.errors == ("dataset: the case file never-uploaded.jsonl is not loaded: give it again (--dataset PATH, "
                           "or upload it on the Experiments page)",)


def test_a_shipped_dataset_needs_no_file() -> None:
    form = read_clinical_form("ddxplus8", "stat, stat:lr-evidence", ["S1"], "1", "", "", "6")
    assert form.ok and form.spec is not None and form.spec.case_file is None and form.spec.n_cal is None
    assert json.dumps(form.spec.to_dict())  # the spec the run stores


def test_a_clinical_launch_reports_cells_from_agent_turns() -> None:
    from studio.experiment_launch import clinical_progress

    ds = read_case_upload(EXAMPLE.read_bytes(), "abdo.jsonl").dataset
    assert ds is not None
    spec = read_clinical_form(ds.name, "stat, stat", ["S1", "S2"], "1", "20", "30", "2").spec
    assert spec is not None
    seen: list[tuple[int, int, str]] = []
    report = clinical_progress(spec, lambda d, t, label: seen.append((d, t, label)))
    per_cell = 2 * (20 * 3 + 30 * (2 * 2 + 2))  # turns_per_cell: agents x (CAL (1 + T) + TEST (2 T + free))
    report(per_cell - 1, 2 * per_cell, "")
    report(per_cell, 2 * per_cell, "")
    assert seen == [(0, 2, f"{per_cell - 1:,} of {2 * per_cell:,} agent turns"),
                    (1, 2, f"{per_cell:,} of {2 * per_cell:,} agent turns")]
