"""The layering contracts in pyproject.toml hold, and each one catches its violation.

``lint-imports`` runs on the project; then, on a copy of the packages, one forbidden
import per contract is planted and the contract is shown to fail, so no contract can be
weakened into one that checks nothing.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("common", "dcem", "runtime", "clinical", "dcem_clinical", "sag", "studio", "training")
LINT = Path(sys.executable).with_name("lint-imports")


def lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run([str(LINT), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_lint_imports_passes_on_the_project() -> None:
    out = lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Contracts: 10 kept, 0 broken." in out.stdout


@pytest.fixture(scope="module")
def copy_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("layers")
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, dest / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


# (file to plant in, the import line, the contract expected to break)
VIOLATIONS = [
    ("dcem/core/energy.py", "import runtime.messages", "Layers"),
    ("runtime/fleet.py", "import dcem.core.policy", "Layers"),
    ("clinical/splits.py", "import runtime.backends", "Layers"),
    ("dcem/core/energy.py", "import sag", "Layers"),
    ("dcem/core/energy.py", "import studio.literal", "Layers"),
    ("dcem_clinical/roles.py", "import sag", "Layers"),
    ("common/terminal.py", "import dcem.core.config", "Layers"),
    ("dcem/analysis/explain.py", "import streamlit", "Nothing below the UI imports Streamlit or the pages"),
    ("runtime/registry.py", "import pages", "Nothing below the UI imports Streamlit or the pages"),
    ("studio/views/walkthrough_nav.py", "import streamlit", "The pages' view-models"),
    ("studio/views/metric_tables.py", "import studio.widgets", "The pages' view-models"),  # Streamlit, indirectly
    ("dcem/core/metrics.py", "import llama_cpp", "dcem loads no model and calls no model server"),
    ("clinical/ddxplus.py", "import huggingface_hub", "Clinical data loads no model"),
    ("runtime/registry.py", "import training.config", "Layers"),
    ("training/__init__.py", "import dcem.core.energy", "The training package knows no experiment"),
    ("runtime/registry.py", "import torch", "Only training code imports the training libraries"),
    ("studio/literal.py", "import peft", "Only training code imports the training libraries"),
    ("studio/literal.py", "import dcem.cli", "No library module imports a command line"),
    ("dcem/store/reviews.py", "import dcem.analysis.run_info", "Inside dcem"),
    ("dcem/synthetic/experiment.py", "import dcem.analysis.report", "Inside dcem"),
    ("dcem/calibration/sets.py", "import dcem.store.database", "Inside dcem"),
    ("sag/group/config.py", "import sag.debate.hybrid", "Inside sag"),
    ("sag/store/tables.py", "import sag.runs.run", "Inside sag"),
    ("sag/runs/run.py", "import sag.evaluation.runner", "Inside sag"),
    ("sag/training/view_training.py", "import sag.views.measures", "Inside sag"),  # siblings, neither imports the other
    ("sag/retrieval.py", "import sag.group.config", "Inside sag"),
]


@pytest.mark.parametrize("target, line, contract", VIOLATIONS)
def test_each_contract_catches_a_planted_import(copy_root: Path, target: str, line: str, contract: str) -> None:
    path = copy_root / target
    original = path.read_text(encoding="utf-8")
    path.write_text(original + f"\n{line}  # planted by the test\n", encoding="utf-8")
    try:
        out = lint(copy_root)
    finally:
        path.write_text(original, encoding="utf-8")
    assert out.returncode != 0
    broken = [ln for ln in out.stdout.splitlines() if ln.endswith(" BROKEN")]
    assert len(broken) == 1 and broken[0].startswith(contract), out.stdout


def test_dcem_modules_load_no_model_runtime_or_ui() -> None:
    """Importing every dcem module pulls in no model runtime, SAG, UI or model library."""
    code = (
        "import importlib, pkgutil, sys, dcem\n"
        "for m in pkgutil.walk_packages(dcem.__path__, 'dcem.'):\n"
        "    if not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in "
        "{'runtime', 'clinical', 'dcem_clinical', 'sag', 'studio', 'pages', 'streamlit', 'llama_cpp', "
        "'huggingface_hub'})\n"
        "print(len([n for n in sys.modules if n.startswith('dcem.')]), bad)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    count, bad = out.stdout.strip().split(" ", 1)
    assert int(count) > 40 and bad == "[]"
