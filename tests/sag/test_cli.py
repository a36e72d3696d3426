"""``python -m sag``: bad input exits 2 with one line and stores nothing; real runs with SmolLM2."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sag.store.tables import SagStore
from tests.cli_inprocess import run_main

ROOT = Path(__file__).resolve().parents[2]


def _sag(*args: str, db: Path, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DCEM_DB": str(db)}
    return subprocess.run([sys.executable, "-m", "sag", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env)


def _quick(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    """A command refused before any model loads, run in this process."""
    return run_main("sag", args, env={"DCEM_DB": str(db)})


def _one_line(out: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in out.stderr.strip().splitlines() if ln.strip()]
    assert out.returncode == 2 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    return lines[0]


def test_bad_question_file_names_line_and_field_and_stores_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "q.jsonl"
    bad.write_text(json.dumps({"id": "a", "question": "Q?", "options": {"A": "x", "B": "y"}, "answer": "A"}) + "\n"
                   + json.dumps({"id": "b", "question": "Q?", "options": {"A": "x"}, "answer": "A"}) + "\n")
    line = _one_line(_quick("run", "--benchmark", str(bad), "--group", "single", "--items", "1", "-q",
                          db=tmp_path / "s.duckdb"))
    assert "line 2" in line and "options" in line
    with SagStore(tmp_path / "s.duckdb") as store:
        assert store.runs().empty


@pytest.mark.parametrize("args, needle", [
    (["run", "--benchmark", "medqa", "--group", "sag-7"], "unknown group"),
    (["run", "--benchmark", "gpqa", "--group", "single"], "unknown benchmark"),
    (["run", "--benchmark", "medqa", "--items", "0"], "items"),
    (["run", "--benchmark", "medqa", "--t-max", "0"], "t_max"),
    (["run", "--benchmark", "medqa", "--model", "file:/no/such.gguf", "--group", "single", "--items", "1"], "such.gguf"),
    (["ask", "Just a question without options"], "at least two options"),
    (["ask", "{not json"], "not valid JSON"),
    (["ask", "Q?\nA. x\nB. y", "--group", "sag-6-dcem"], "calibration"),
])
def test_bad_input_exits_2_with_one_line(args: list[str], needle: str, tmp_path: Path) -> None:
    quiet = ["-q"] if args[0] == "run" else []
    assert needle in _one_line(_quick(*args, *quiet, db=tmp_path / "s.duckdb"))
    with SagStore(tmp_path / "s.duckdb") as store:
        assert store.runs().empty


def test_report_without_runs_says_how_to_make_one(tmp_path: Path) -> None:
    assert "no store file" in _one_line(_quick("report", db=tmp_path / "s.duckdb"))
    assert not (tmp_path / "s.duckdb").exists()
    SagStore(tmp_path / "s.duckdb").close()
    assert "python -m sag run" in _one_line(_quick("report", db=tmp_path / "s.duckdb"))


@pytest.mark.slow
def test_real_single_agent_run_resumes_with_zero_calls(tmp_path: Path) -> None:
    args = ("run", "--benchmark", "medqa", "--group", "single", "--items", "2", "--threads", "1", "-q",
            "--rationale-tokens", "8")
    first = _sag(*args, db=tmp_path / "s.duckdb")
    assert first.returncode == 0, first.stderr
    assert "2 items answered now" in first.stdout and "2 model calls" in first.stdout
    again = _sag(*args, db=tmp_path / "s.duckdb")
    assert again.returncode == 0 and "0 items answered now" in again.stdout and "0 model calls" in again.stdout
    report = _sag("report", db=tmp_path / "s.duckdb")
    assert "medqa" in report.stdout and "single" in report.stdout
    with SagStore(tmp_path / "s.duckdb") as store:
        outcomes = store.outcomes()
        messages = store.messages(outcomes["run_id"].iloc[0], outcomes["item_id"].iloc[0])
    assert len(outcomes) == 2 and set(outcomes["answer"]) <= set("ABCDE")
    dist = messages["distribution"].iloc[0]
    assert abs(sum(dist) - 1.0) < 1e-9 and messages["model"].iloc[0] == "smollm2-135m"


@pytest.mark.slow
def test_real_group_debate_is_printed_round_by_round(tmp_path: Path) -> None:
    question = ("Burning chest pain after meals, worse lying down. Most likely diagnosis?\n"
                "A. Gastro-oesophageal reflux disease\nB. Pulmonary embolism")
    out = _sag("ask", question, "--group", "sag-6", "--t-max", "1", "--rationale-tokens", "6", "--threads", "1",
               db=tmp_path / "s.duckdb")
    assert out.returncode == 0, out.stderr
    for needle in ("Round 0, retrieval:", "Round 0, proposal:", "Round 1, debate:", "Round 1, safety audit:",
                   "Round 1, judgement:", "Group answer:", "not clinical advice"):
        assert needle in out.stdout
    assert "Correct answer" not in out.stdout  # typed questions have no known answer


@pytest.mark.slow
def test_mixed_backbones_share_one_model_per_key(tmp_path: Path) -> None:
    """sag-6-mixed: reasoning agents and the judge on Gemma 3 270M (a base model, plain
    prompts), knowledge and safety agents on SmolLM2 (chat template), batched runners."""
    from clinical.questions import parse_jsonl_items
    from sag.group.config import preset
    from sag.debate.answer import answer_item
    from sag.debate.runners import batch_width, build_runners

    item = parse_jsonl_items(json.dumps({"id": "q", "question": "Burning chest pain after meals, worse lying down?",
                                         "options": ["Reflux disease", "Pulmonary embolism"], "answer": "A"}))[0]
    cfg = preset("sag-6-mixed").with_changes(t_max=1, rationale_tokens=6)
    runners = build_runners(cfg.models(), n_threads=1, width=batch_width(cfg), n_ctx=2048)
    assert set(runners) == {"gemma3-270m", "smollm2-135m"}
    assert {r.model_id for r in runners.values()} == {"gemma-3-270m-q4_k_m.gguf", "SmolLM2-135M-Instruct.Q4_1.gguf"}
    result = answer_item(item, cfg, runners, {})
    turns = [m for m in result.outcome.messages if m.phase != "retrieve"]
    assert len(turns) == 8 and not any(m.error for m in turns)
    assert {m.model for m in turns if m.agent_id in ("R1", "R2", "J1")} == {"gemma3-270m"}
    assert {m.model for m in turns if m.agent_id in ("K1", "K2", "S1")} == {"smollm2-135m"}
    assert result.answer in ("A", "B")
