"""``python -m sag train``: an unknown benchmark, a group it cannot train and bad
settings are refused with one line and status 2, before any model loads."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_inprocess import run_main


@pytest.mark.parametrize("flags, words", [
    (["--benchmarks", "medqa,nejm"], "benchmarks: choose among medqa, medmcqa, pubmedqa"),
    (["--benchmarks", " , "], "benchmarks: choose among"),
    (["--method", "ctde"], "method: the single agent trains with grpo"),
    (["--group", "sag-6-mixed"], "group: group training adapts one base model; sag-6-mixed mixes gemma3-270m, smollm2-135m"),
    (["--group", "sag-6", "--model", "nope-1b"], "unknown model key"),
    (["--group", "sag-6", "--lora-layers", "99"], "lora_layers: the model has 30 decoder layers, got 99"),
    (["--group", "sag-6-dcem"], "group: sag-6-dcem does not debate the way group training plays"),
    (["--group", "vote-6"], "group: vote-6 does not debate the way group training plays"),
    (["--group", "sag-99"], "unknown group"),
    (["--group", "sag-6", "--group-size", "1"], "group_size: a group learns from several debates"),
    (["--group", "sag-6", "--benchmarks", "medsafetybench,nejm"],
     "benchmarks: choose among medqa, medmcqa, pubmedqa, medsafetybench, ddxplus8"),
    (["--group", "sag-6", "--temperature", "0"], "--temperature"),
    (["--group", "sag-6", "--critic-warmup", "-1"], "--critic-warmup"),
    (["--beta", "-1"], "--beta"),
    (["--supervised", "-1"], "--supervised"),
    (["--group", "sag-6", "--group-size", "2", "--supervised", "1"],
     "supervised: a group run trains sampled debates, which have no log-likelihood term"),
    (["--rationale-actions"], "rationale_actions: the single agent answers a letter without a rationale"),
    (["--group", "sag-6", "--method", "ctde", "--rationale-actions"], "rationale_actions: rationale tokens are actions of GRPO only"),
    (["--device", "gpu"], "device: must be auto, cpu, cuda or cuda:N, got 'gpu'"),
    (["--device", "cuda:99"], "device: cuda:99 was asked for, but this machine has"),
    (["--group", "sag-6", "--device", "cuda:99"], "device: cuda:99 was asked for, but this machine has"),
    (["--model", "nope-1b"], "unknown model key"),
])
def test_bad_train_flags_are_one_line_with_status_2(tmp_path: Path, flags: list[str], words: str) -> None:
    out = run_main("sag", ["train", "--db", str(tmp_path / "x.duckdb"), "--out", str(tmp_path / "o"), "--quiet",
                           *flags])
    assert out.returncode == 2, out.stderr
    assert words in out.stderr and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert not (tmp_path / "o").exists()
