"""Issue 51: the training commands (``python -m sag train``, ``python -m dcem_clinical
train``) refuse bad output folders and prompt limits with one line and status 2 before
anything loads or is stored, and a run that fails before its first step (a base that will
not load, a damaged checkpoint) leaves no row in ``train_runs``."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import training.base_model
from clinical.questions import QuestionItem
from common.cli_args import writable_folder
from common.errors import ConfigError
from runtime.registry import resolve
from sag.training.single_agent import build_single_items
from tests.cli_inprocess import run_main
from tests.store_rows import store_rows
from tests.training.tiny import cue_items, tiny_base
from training.config import RewardWeights, TrainSettings
from training.run import LetterRun, run_letter_training
from training.store import TrainingStore

TRAIN = {"sag": ["train"], "dcem_clinical": ["train"], "sag group": ["train", "--group", "sag-6"]}


def _refused(out: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 2 and len(lines) == 1 and "error: " in lines[0] and "Traceback" not in out.stderr, \
        (out.returncode, out.stderr)
    return lines[0]


def _bad_outs(tmp_path: Path) -> dict[str, tuple[str, str]]:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    outs = {"a file": (str(a_file), "is a file, not a folder"),
            "below a file": (str(a_file / "runs"), "on its path is a file, not a folder"),
            "empty": ("", "give a folder, got an empty path"),
            "blank": ("  ", "give a folder, got an empty path"),
            "a link to nothing": (str(tmp_path / "dangling" / "runs"), "is a link to nothing")}
    if Path("/proc").is_dir():
        outs["/proc"] = ("/proc/x", "cannot write in /proc")
    return outs


@pytest.mark.parametrize("command", sorted(TRAIN))
def test_an_output_folder_that_cannot_be_written_is_refused_while_parsing(tmp_path: Path, command: str) -> None:
    cli = command.split()[0]
    db = tmp_path / "store.duckdb"
    for name, (out, says) in _bad_outs(tmp_path).items():
        line = _refused(run_main(cli, [*TRAIN[command], "--out", out, "--db", str(db), "--quiet"]))
        assert line.endswith(says) or says in line, (name, line)
        assert "argument --out: " in line and not db.exists(), name


def test_a_writable_folder_is_taken_and_nothing_is_created(tmp_path: Path) -> None:
    deep = tmp_path / "runs" / "train"
    assert writable_folder(str(deep)) == str(deep) and not (tmp_path / "runs").exists()
    assert writable_folder(str(tmp_path)) == str(tmp_path) and os.listdir(tmp_path) == []


@pytest.mark.parametrize("command", sorted(TRAIN))
@pytest.mark.parametrize("value", ["16", "63", "0"])
def test_a_prompt_limit_no_prompt_fits_is_refused_while_parsing(tmp_path: Path, command: str, value: str) -> None:
    cli = command.split()[0]
    db = tmp_path / "store.duckdb"
    line = _refused(run_main(cli, [*TRAIN[command], "--max-prompt-tokens", value, "--out", str(tmp_path / "o"),
                                   "--db", str(db), "--quiet"]))
    assert "--max-prompt-tokens: must be a whole number from 64 to 131,072" in line and not db.exists()
    with pytest.raises(ConfigError):
        TrainSettings(max_prompt_tokens=int(value))


def test_a_diagnosis_case_longer_than_the_limit_is_one_line_and_records_nothing(tmp_path: Path) -> None:
    """DDXPlus-8 prompts have 258 tokens or more with SmolLM2's tokenizer: 100 keeps none."""
    db = tmp_path / "store.duckdb"
    TrainingStore(db).close()
    before = store_rows(db)
    line = _refused(run_main("dcem_clinical", ["train", "--max-prompt-tokens", "100", "--out", str(tmp_path / "o"),
                                               "--db", str(db), "--quiet", "--heldout", "0"]))
    assert line.startswith("error: max_prompt_tokens: case ") and "above 100; every training case must fit" in line
    assert "give a larger --max-prompt-tokens" in line
    assert store_rows(db) == before and not (tmp_path / "o").exists()


class _Tokens:
    """A stand-in for the llama.cpp backend's tokenizer: every prompt has ``n`` tokens."""

    def __init__(self, n: int) -> None:
        self.n = n

    def prompt_tokens(self, messages: Any) -> list[int]:
        return list(range(self.n))

    def option_token(self, letter: str) -> int:
        return ord(letter)


def test_single_agent_items_of_which_none_fits_are_a_config_error() -> None:
    items = [QuestionItem(f"q{i}", "Which one?", (("A", "x"), ("B", "y")), "A", "medqa") for i in range(3)]
    with pytest.raises(ConfigError) as info:
        build_single_items(_Tokens(150), items, max_tokens=100, rewards=RewardWeights())  # type: ignore[arg-type]
    assert info.value.field == "max_prompt_tokens" and "the shortest of 3 has 150" in str(info.value)
    kept = build_single_items(_Tokens(150), items, max_tokens=150, rewards=RewardWeights())  # type: ignore[arg-type]
    assert kept.ids == ("q0", "q1", "q2")


def _run(tmp_path: Path) -> LetterRun:
    return LetterRun("test", "smollm2-135m", resolve("smollm2-135m"), "0" * 64,
                     TrainSettings(steps=2, batch_size=4, device="cpu", threads=1), cue_items(8, seed=1), "cue", "h",
                     {}, tmp_path / "out")


def test_a_base_that_will_not_load_leaves_no_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def load_base(path: Path, device: str = "cpu") -> Any:
        raise ConfigError("model", "transformers cannot read this GGUF file")

    monkeypatch.setattr(training.base_model, "load_base", load_base)
    db = tmp_path / "store.duckdb"
    TrainingStore(db).close()
    before = store_rows(db)
    with TrainingStore(db) as store, pytest.raises(ConfigError, match="cannot read this GGUF"):
        run_letter_training(store, _run(tmp_path))
    assert store_rows(db) == before


def test_a_damaged_checkpoint_leaves_no_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(training.base_model, "load_base", lambda path, device="cpu": tiny_base())
    run = _run(tmp_path)
    folder = run.out / run.run_id / "checkpoint"
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text("{not json", encoding="utf-8")
    db = tmp_path / "store.duckdb"
    TrainingStore(db).close()
    before = store_rows(db)
    with TrainingStore(db) as store, pytest.raises(Exception, match="checkpoint .*damaged"):
        run_letter_training(store, run)
    assert store_rows(db) == before


@pytest.mark.parametrize("command", sorted(TRAIN))
@pytest.mark.parametrize("model, says", [("nope-1b", "unknown model key 'nope-1b'"),
                                         ("smollm2-135m+lora:nope", "unknown adapter 'nope'")])
def test_an_unknown_base_or_adapter_records_nothing(tmp_path: Path, command: str, model: str, says: str) -> None:
    cli = command.split()[0]
    db = tmp_path / "store.duckdb"
    TrainingStore(db).close()
    before = store_rows(db)
    line = _refused(run_main(cli, [*TRAIN[command], "--model", model, "--out", str(tmp_path / "o"), "--db", str(db),
                                   "--quiet"]))
    assert says in line
    assert store_rows(db) == before and not (tmp_path / "o").exists()
