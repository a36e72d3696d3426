"""``python -m dcem_clinical run --dataset FILE``: a case file end to end (statistical
members, then a real SmolLM2 member), its export reported without the file, malformed
files and options refused with one line and nothing stored, and a case too long for a
member's context named before anything runs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcem.store.database import Store
from tests.cli_inprocess import run_main

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "examples" / "abdominal_pain_cases.jsonl"
HIGH = ["--high-risk", "Appendicitis,Ectopic_pregnancy"]
SMALL = ["--cal-cases", "20", "--cases", "15", "--t-max", "3", "--free-rounds", "2", "--quiet"]


def test_a_case_file_runs_exports_and_reports_from_the_export_alone(tmp_path: Path) -> None:
    db, out = tmp_path / "s.duckdb", tmp_path / "export"
    args = ["run", "--dataset", str(EXAMPLE), *HIGH, "--agents", "stat:tfidf-lr@history,stat:tfidf-lr@exam",
            "--scenario", "S1,S3a", *SMALL, "--db", str(db)]
    done = run_main("dcem_clinical", args)
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.split()[1]
    again = run_main("dcem_clinical", args)
    assert again.returncode == 0 and "(resumed): 0 cells computed, 2 already stored" in again.stdout
    exported = run_main("dcem_clinical", ["export", "--run", run_id, "--out", str(out), "--command", " ".join(args),
                                          "--db", str(db)])
    assert exported.returncode == 0, exported.stderr
    report = run_main("dcem_clinical", ["report", "--from-export", str(out)])
    assert report.returncode == 0, report.stderr
    for title in ("Table 6", "Table 7", "Table 1", "file:abdominal_pain_cases.jsonl", "Beside chance", "Ectopic_pregnancy"):
        assert title in report.stdout
    with Store(db, read_only=True) as store:
        spec = json.loads(store.runs()["spec_json"].iloc[0])
        assert spec["case_file"]["file"] == "abdominal_pain_cases.jsonl" and spec["case_file"]["high_risk"] == [0, 2]
        cell = store.load_cell(run_id, "S3a", 0)
        assert cell.panel.labels[0] == "Appendicitis" and float(cell.panel.loss[3, 0]) == 5.0


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _lines(n: int = 12) -> list[bytes]:
    return EXAMPLE.read_bytes().splitlines()[:n]


@pytest.mark.parametrize("name, data, words", [
    ("latin.jsonl", b"\n".join(_lines()).replace(b"year-old", b"ann\xe9es", 1), "is not UTF-8: line"),
    ("broken.jsonl", b"\n".join(_lines()[:5] + [b'{"id": "x", "text": '] + _lines()[5:]), "line 6 is not JSON"),
    ("twice.jsonl", b"\n".join(_lines() + _lines()[:1]), "id 'abd-001' is already on line 1"),
    ("nolabel.jsonl", b"\n".join(_lines()[:3] + [json.dumps({"id": "z", "text": "t"}).encode()]),
     "line 4: label is missing"),
    ("one.jsonl", b"\n".join(line for line in EXAMPLE.read_bytes().splitlines() if b"Gastroenteritis" in line),
     "a single class (Gastroenteritis)"),
    ("thin.jsonl", b"\n".join([line for line in EXAMPLE.read_bytes().splitlines() if b"Ectopic" not in line]
                               + [next(line for line in _lines(300) if b"Ectopic" in line)]),
     "class 'Ectopic_pregnancy' has 1 case; the drawn CAL/TEST split needs at least 2"),
    ("cases.csv", b"id,text,diagnosis\n", "line 1: unknown column 'diagnosis'"),
])
def test_malformed_case_files_are_refused_with_one_line_and_nothing_stored(tmp_path: Path, name: str, data: bytes,
                                                                         words: str) -> None:
    path = _write(tmp_path, name, data)
    db = tmp_path / "s.duckdb"
    got = run_main("dcem_clinical", ["run", "--dataset", str(path), "--agents", "stat,stat", *SMALL, "--db", str(db)])
    assert got.returncode == 2, got.stderr
    assert words in got.stderr and len(got.stderr.strip().splitlines()) == 1 and "Traceback" not in got.stderr
    assert not db.exists()


@pytest.mark.parametrize("flags, words", [
    (["--labels", "Appendicitis,Renal_colic"], "label 'Biliary_colic' is not in --labels"),
    (["--high-risk", "Sepsis"], "'Sepsis' is not a class of abdominal_pain_cases.jsonl"),
    (["--loss", "nope.json"], "loss: nope.json: no such file"),
    (["--l-high", "-1"], "--l-high"),
    (["--agents", "stat@labs,stat"], "unknown view 'labs' for file:abdominal_pain_cases.jsonl cases"),
    (["--agents", "stat:nb-evidence,stat"], "cannot read file:abdominal_pain_cases.jsonl cases"),
    (["--cal-cases", "3"], "has 5 classes: give --cal-cases 5 or more"),
])
def test_bad_options_for_a_case_file_are_refused(tmp_path: Path, flags: list[str], words: str) -> None:
    db = tmp_path / "s.duckdb"
    got = run_main("dcem_clinical", ["run", "--dataset", str(EXAMPLE), "--agents", "stat,stat", "--quiet",
                                     "--db", str(db), *flags])
    assert got.returncode == 2, got.stderr
    assert words in got.stderr and len(got.stderr.strip().splitlines()) == 1
    assert not db.exists()


def test_a_case_too_long_for_the_members_context_is_named_before_anything_runs(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()]
    rows[7]["text"] = "The patient describes the pain at length. " * 150
    path = tmp_path / "long.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    db = tmp_path / "s.duckdb"
    got = run_main("dcem_clinical", ["run", "--dataset", str(path), "--agents", "smollm2-135m,stat", "--n-ctx", "1024",
                                     *SMALL, "--db", str(db)])
    assert got.returncode == 2, got.stderr
    assert "case_file: 1 case is longer than smollm2-135m can read in a 1,024-token context" in got.stderr
    assert "abd-008" in got.stderr and not db.exists()
    from clinical.case_file import read_case_file
    from clinical.datasets import use_dataset
    from dcem_clinical.case_lengths import check_case_lengths

    ds = use_dataset(read_case_file(path))
    check_case_lengths(ds, ("smollm2-135m@history", "stat"), ("S1",), 1024)  # the history view holds no long text


def test_a_real_smollm2_member_beside_a_statistical_one_on_a_case_file(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    got = run_main("dcem_clinical", ["run", "--dataset", str(EXAMPLE), *HIGH, "--agents",
                                     "smollm2-135m@history,stat:tfidf-lr@exam", "--cal-cases", "5", "--cases", "5",
                                     "--t-max", "2", "--free-rounds", "1", "--quiet", "--threads", "2", "--db", str(db)])
    assert got.returncode == 0, got.stderr
    with Store(db, read_only=True) as store:
        run_id = store.runs()["run_id"].iloc[0]
        turns = store.con.execute("SELECT count(*) FROM agent_turns WHERE run_id = ? AND agent = 0",
                                  [run_id]).fetchone()[0]
        outcomes = store.outcomes(run_id, "dcem")
    assert turns > 0 and len(outcomes) == 5


def test_learn_then_test_thresholds_on_a_case_file(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    got = run_main("dcem_clinical", ["run", "--dataset", str(EXAMPLE), *HIGH, "--agents", "stat@history,stat@exam",
                                     "--fit", "ltt", "--alpha", "0.2", *SMALL, "--db", str(db)])
    assert got.returncode == 0, got.stderr
    with Store(db, read_only=True) as store:
        spec = json.loads(store.runs()["spec_json"].iloc[0])
        assert spec["risk_target"]["alpha"] == 0.2 and spec["case_file"]["file"] == "abdominal_pain_cases.jsonl"
        assert len(store.outcomes(str(store.runs()["run_id"].iloc[0]), "dcem")) == 15
