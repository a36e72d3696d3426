"""The docs' training numbers are the shipped records' (issue 51, item 17): the llama.cpp /
torch agreement REPRODUCTION.md states is the one recorded in
data/results/training/agreement.json, each shipped training command in REPRODUCTION.md is
the command its manifest recorded, and BENCHMARKS.md's account of the diagnostician's run
is its steps.parquet."""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

from common.errors import InputError
from training.agreement import RECORD_NAME, read_agreement_record, recorded_agreement
from training.shipped import exports_dir, read_shipped, shipped_exports

ROOT = Path(__file__).resolve().parents[2]
RECORD = exports_dir() / RECORD_NAME


def _text(name: str) -> str:
    return " ".join((ROOT / name).read_text(encoding="utf-8").split())  # the prose with its line breaks as spaces


@pytest.mark.parametrize("name", ["ddxplus8-grpo", "ddxplus8-grpo-balanced"])
def test_reproductions_agreement_sentence_is_the_record(name: str) -> None:
    """The paragraph that names the diagnostician's agreement command states its record."""
    raw = (ROOT / "REPRODUCTION.md").read_text(encoding="utf-8")
    paragraphs = [" ".join(p.split()) for p in raw.split("\n\n")]
    text = next((p for p in paragraphs if f"--name {name} --items 12 50" in p), "")
    found = re.search(r"on the first (\d+) held-out cases it gives torch's letter on (every one|\d+ of them), and "
                      r"both score (\d+) of the \1 right; the option log-probabilities differ by (\d\.\d+) on average",
                      text)
    assert found, f"the agreement sentence of {name} is gone from REPRODUCTION.md"
    items = int(found.group(1))
    rec = recorded_agreement(RECORD, name, items)
    assert rec is not None, f"no recorded measurement on {items} items"
    same = rec["items"] if found.group(2) == "every one" else int(found.group(2).split()[0])
    assert same == rec["same_letter"]
    assert int(found.group(3)) == rec["torch_right"] == rec["llama_cpp_right"]
    assert found.group(4) == f"{rec['mean_abs_diff']:.3f}"
    small = recorded_agreement(RECORD, name, 12)
    assert small is not None
    assert (f"on the first 12 cases: {small['same_letter']} of 12, {small['mean_abs_diff']:.4f}" in text)


def test_the_record_holds_both_measurements_of_the_shipped_diagnostician() -> None:
    rows = read_agreement_record(RECORD)
    for name in ("ddxplus8-grpo", "ddxplus8-grpo-balanced"):
        assert sorted(r["items"] for r in rows if r["adapter"] == name) == [12, 50]
    assert all(r["command"].startswith("python benchmarks/adapter_agreement.py") for r in rows)


@pytest.mark.parametrize("doc, message", [
    ({"measurements": [{"adapter": "x"}]}, "measurement 1: 'dataset' must be a str, got None"),
    ({"measurements": []}, "holds no list of measurements"),
    ([], "holds no list of measurements"),
])
def test_a_bad_record_is_refused_naming_the_field(tmp_path: Path, doc: object, message: str) -> None:
    path = tmp_path / RECORD_NAME
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(message)):
        read_agreement_record(path)
    path.write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match="cannot be read"):
        read_agreement_record(path)


def _training_command(name: str) -> str:
    """The training command a manifest recorded, without its store and output paths."""
    first = read_shipped(name).manifest["command"].splitlines()[0]
    return re.sub(r" --(db|out) \S+", "", first)


@pytest.mark.parametrize("name", [p.name for p in shipped_exports()])
def test_reproduction_shows_the_training_command_its_manifest_recorded(name: str) -> None:
    lines = (ROOT / "REPRODUCTION.md").read_text(encoding="utf-8").splitlines()
    command = _training_command(name)
    method = re.search(r"--method (grpo|ctde)$", command)
    if method:  # the two group trainings share one line: --method grpo|ctde
        command = command[:method.start()] + "--method grpo|ctde"
    assert command in lines, f"REPRODUCTION.md does not show {name}'s command: {command}"


def test_benchmarks_account_of_the_diagnosticians_run_is_its_steps() -> None:
    steps = read_shipped("ddxplus8-grpo").steps.set_index("step")
    seconds = steps["seconds"]
    text = _text("BENCHMARKS.md")
    q1, median, q3 = statistics.quantiles(seconds, n=4, method="inclusive")
    assert (f"{len(steps)} steps, {int(steps['items'].sum())} prompts, {int(steps['tokens'].sum()):,} prompt tokens; "
            f"median {median:.1f} s per step (quartiles {q1:.1f} and {q3:.1f} s), {seconds.sum() / 60:.1f} minutes"
            in text)
    slow = seconds[seconds > 60]
    run = [s for s in slow.index if s > 1]
    assert run == list(range(run[0], run[-1] + 1))  # one stretch of slow steps, and step 1
    assert (f"steps {run[0]}-{run[-1]} took {seconds[run].min():.0f}-{seconds[run].max():.0f} s each, and step 1 "
            f"{seconds[1]:.0f} s" in text)
    assert f"(steps 8 and 9: {seconds[8]:.0f} and {seconds[9]:.0f} s;" in text
