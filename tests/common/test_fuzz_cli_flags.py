"""Fuzz tests of the command-line flags of ``python -m sag run``, ``python -m dcem_clinical
run`` and ``python -m dcem run synthetic`` / ``ceilings``, run in-process with the store,
the experiment and model loading replaced by recorders (:mod:`tests.common.cli_flag_cases`).

Each input is a few ``--flag=value`` pairs, mostly near-valid: values at and beyond the
ends of a flag's range, huge and negative numbers, NaN, infinities, fractions, exponents,
empty and blank strings, other digits and control characters.  A value outside its
range must end in one ``error:`` line with exit status 2 before the store is opened or a
model is loaded; an accepted input must pass every value on exactly as written.
``pytest -m fuzz_large -s`` tries 10,000 inputs per command line and prints the counts.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st

from tests.common.cli_flag_cases import COMMANDS, Command, check_command, install_stand_ins, write_items
from tests.dcem.fuzz_support import DEFAULT, LARGE, run_budget

_ODD = ["", " ", "nan", "NaN", "inf", "-inf", "Infinity", "1e3", "1e20", "-1e20", "1.0", "0.5", "-0", "+1", "0x10",
        "1_0", "٣", "1" * 40, "9" * 5000, "1\n2", "\x00", "2\t", " 7 ", "--", "true", "None", "1,5", "½"]


def _near(oracle_range: tuple[float, float], whole: bool) -> st.SearchStrategy[str]:
    low, high = oracle_range
    points = [low, high, low - 1, high + 1, (low + high) / 2, 10 ** 20, -(10 ** 20), 0, 1, -1]
    if whole:
        around = st.integers(int(low) - 3, int(min(high, low + 50)) + 3).map(str)
        return st.sampled_from([str(int(p)) for p in points]) | around
    return (st.sampled_from([repr(float(p)) for p in points])
            | st.floats(low - 1, high + 1, allow_nan=False).map(repr) | st.floats().map(repr))


_RANGES: dict[str, dict[str, tuple[tuple[float, float], bool]]] = {
    "sag": {"--threads": ((1, 1024), True), "--n-gpu-layers": ((-1, 1024), True), "--items": ((1, 25), True),
            "--seed": ((0, 2**32 - 1), True), "--t-max": ((1, 10), True), "--rationale-tokens": ((1, 512), True),
            "--top-k": ((1, 10), True), "--temperature": ((0, 5), False)},
    "dcem_clinical": {"--seeds": ((1, 10_000), True), "--seed-start": ((0, 2**31 - 1), True),
                      "--cases": ((1, 10**6), True), "--cal-cases": ((8, 10**6), True), "--few-shot": ((0, 16), True),
                      "--temperature": ((0, 2), False), "--t-max": ((1, 100_000), True),
                      "--free-rounds": ((1, 100_000), True), "--n-ctx": ((256, 131_072), True),
                      "--n-gpu-layers": ((-1, 1024), True), "--threads": ((1, 1024), True)},
    "dcem": {"--seeds": ((1, 10_000), True), "--seed-start": ((0, 2**31 - 1), True), "--xi": ((0, 1), False),
             "--t-max": ((1, 100_000), True), "--free-rounds": ((1, 100_000), True),
             "--n-train": ((10, 10**7), True), "--n-eval": ((1, 10**7), True), "--sharpness": ((0, 1e6), False),
             "--kappa": ((0, 1e6), False), "--n": ((1000, 10**7), True), "--seed": ((0, 2**31 - 1), True)},
}


@st.composite
def _inputs(draw: Any) -> tuple[Command, dict[str, str]]:
    command = draw(st.sampled_from(COMMANDS))
    flags = draw(st.lists(st.sampled_from(sorted(command.flags)), min_size=1, max_size=4, unique=True))
    values = {}
    for flag in flags:
        span, whole = _RANGES[command.cli][flag]
        odd = st.sampled_from(_ODD) | st.text(max_size=6)
        values[flag] = draw(_near(span, whole) if draw(st.integers(0, 3)) else odd)
    return command, values


def _fuzz(budget: settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record: dict[str, Any] = {}
    install_stand_ins(monkeypatch, record)
    items = write_items(tmp_path)
    counts = run_budget("command-line flags", _inputs(), lambda value: check_command(*value, record, items), budget)
    assert counts["error"] and counts["valid"]


def test_fuzz_command_line_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fuzz(settings(DEFAULT, max_examples=100), tmp_path, monkeypatch)  # a parser is built for every input


@pytest.mark.fuzz_large
def test_fuzz_command_line_flags_large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fuzz(LARGE, tmp_path, monkeypatch)
