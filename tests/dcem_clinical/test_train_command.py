"""``python -m dcem_clinical train``: bad flags and an unknown base model are refused with one
line and status 2, before any model loads."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_inprocess import run_main


@pytest.mark.parametrize("flags, words", [
    (["--steps", "0"], "--steps"),
    (["--lr", "nan"], "--lr"),
    (["--group-size", "1"], "group_size"),
    (["--lora-r", "9999"], "--lora-r"),
    (["--model", "nope-1b"], "unknown model key"),
    (["--lora-layers", "31"], "lora_layers: the model has 30 decoder layers, got 31"),
    (["--sampling", "rare-first"], "--sampling"),
])
def test_bad_flags_are_one_line_with_status_2(tmp_path: Path, flags: list[str], words: str) -> None:
    out = run_main("dcem_clinical", ["train", "--db", str(tmp_path / "x.duckdb"), "--out", str(tmp_path / "o"),
                                     "--quiet", *flags])
    assert out.returncode == 2, out.stderr
    assert words in out.stderr and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_balanced_sampling_reaches_the_run_settings() -> None:
    """``--sampling balanced`` (every diagnosis drawn equally often) is a setting of the run,
    so it names a run of its own; the default keeps the shipped diagnostician's run id."""
    from dcem_clinical.cli import _parser
    from training.cli import settings_from

    plain = settings_from(_parser().parse_args(["train"]))
    balanced = settings_from(_parser().parse_args(["train", "--sampling", "balanced", "--supervised", "1"]))
    assert plain.sampling == "uniform" and balanced.sampling == "balanced" and balanced.supervised == 1.0
    assert "sampling" not in plain.recorded() and balanced.recorded()["sampling"] == "balanced"
