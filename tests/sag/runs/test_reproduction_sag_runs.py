"""REPRODUCTION.md prints the comparisons of the shipped SAG run exports
(``data/results/sag_runs/<name>``) exactly as ``python -m sag compare ... --export`` prints
them, and names every shipped export at least once.

A block is marked ``<!-- sag-compare <export> <base> <run> [<run> ...]:begin -->`` and
ends with the same name and ``:end``.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from dcem.analysis.reproduction import reproduction_block
from sag.runs.run_export import read_run_export

from ..cli_fakes import run_cli

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "data" / "results" / "sag_runs"
_BLOCK = re.compile(r"<!-- (sag-compare [^>]*?):begin -->")


def _blocks() -> list[str]:
    return _BLOCK.findall((ROOT / "REPRODUCTION.md").read_text(encoding="utf-8"))


def _exports() -> list[str]:
    return sorted(p.name for p in SHIPPED.iterdir() if p.is_dir()) if SHIPPED.is_dir() else []


@pytest.mark.parametrize("name", _exports())
def test_every_shipped_export_reads_and_is_compared_in_reproduction(name: str) -> None:
    export = read_run_export(SHIPPED / name)  # every file checked against its manifest
    assert export.manifest["command"].startswith("python -m sag run"), "the manifest names the commands"
    assert any(block.split()[1] == name for block in _blocks()), f"REPRODUCTION.md compares no run of {name}"


@pytest.mark.parametrize("block", _blocks())
def test_reproduction_prints_what_compare_prints(block: str) -> None:
    _, name, base, *runs = block.split()
    code, out, err = run_cli(["compare", base, *runs, "--export", str(SHIPPED / name)])
    assert code == 0, err
    text = (ROOT / "REPRODUCTION.md").read_text(encoding="utf-8")
    assert reproduction_block(text, block) == out.strip("\n")
