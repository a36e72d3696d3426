"""Issue 51: ``python -m dcem_clinical run`` checks its members and its CAL size before the
first write.  An unknown model key, adapter, view or ``openai:`` key, a model that will not
load and ``--cal-cases`` below the dataset's class count exit 2 with one line, leave the
store as it was (no run listed "running") and start no model and no Ray; and ``models
--info`` lists every model when ``data/adapters/`` holds a file that is no adapter."""
from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import common.ray_work
import dcem_clinical.run
import runtime.adapters
import runtime.registry
from dcem.core.config import MediatorConfig
from dcem.store.database import Store
from runtime.backends import BackendError
from runtime.registry import resolve
from tests.cli_inprocess import run_main
from tests.common.cli_flag_cases import install_stand_ins
from tests.runtime.adapter_files import write_adapter
from tests.store_rows import store_rows


def _store(tmp_path: Path) -> Path:
    path = tmp_path / "store.duckdb"
    with Store(path) as store:
        store.ensure_run("earlier", kind="synthetic", spec={"n": 1}, config=MediatorConfig(), seeds=[0])
    return path


def _refused(out: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ") \
        and "Traceback" not in out.stderr, (out.returncode, out.stderr)
    return lines[0]


@pytest.fixture()
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    """Joining Ray fails the test: a refusal must come first."""
    def connect(self: Any) -> None:
        raise AssertionError("Ray was started before the members were checked")

    monkeypatch.setattr(common.ray_work.RayExecutor, "connect", connect)


@pytest.mark.parametrize("agents, says", [
    ("bogus-model,also-bogus", "unknown model key 'bogus-model'"),
    ("smollm2-135m+lora:nope,stat", "unknown adapter 'nope'"),
    ("openai:notaurl,stat", "'notaurl' must start with http:// or https://"),
    ("file:/etc/hostname,stat", "file: keys may only name GGUF files inside the models folder"),
    ("smollm2-135m@nope,stat", "unknown view 'nope' for ddxplus8 cases"),
    ("stat:nope,stat", "stat:nope"),
])
@pytest.mark.parametrize("executor", ["process", "ray"])
def test_a_bad_member_is_refused_before_anything_is_stored(tmp_path: Path, agents: str, says: str, executor: str,
                                                           no_ray: None) -> None:
    db = _store(tmp_path)
    before = store_rows(db)
    line = _refused(run_main("dcem_clinical", ["run", "--quiet", "--agents", agents, "--executor", executor,
                                               "--db", str(db)]))
    assert says in line, line
    assert store_rows(db) == before  # no clinical run "running"


def test_a_model_that_will_not_load_leaves_no_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def make_backend(key: str, **kwargs: Any) -> Any:
        raise BackendError(f"{key}: llama.cpp could not load the model")

    monkeypatch.setattr(dcem_clinical.run, "make_backend", make_backend)
    db = _store(tmp_path)
    before = store_rows(db)
    line = _refused(run_main("dcem_clinical", ["run", "--quiet", "--agents", "smollm2-135m,stat", "--cases", "8",
                                               "--cal-cases", "8", "--db", str(db)]))
    assert "smollm2-135m: llama.cpp could not load the model" in line
    assert store_rows(db) == before


@pytest.mark.parametrize("dataset, cal, classes", [("ddxplus8", 1, 8), ("ddxplus8", 7, 8), ("medqa-tri", 6, 7)])
def test_fewer_cal_cases_than_classes_are_refused_before_any_model(dataset: str, cal: int, classes: int,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    record: dict[str, Any] = {}
    install_stand_ins(monkeypatch, record)
    line = _refused(run_main("dcem_clinical", ["run", "--quiet", "--dataset", dataset, "--cal-cases", str(cal)]))
    assert f"cal_cases: {dataset} has {classes} classes: give --cal-cases {classes} or more" in line
    assert f"got {cal}" in line and not record  # no store, no run, no model
    out = run_main("dcem_clinical", ["run", "--quiet", "--dataset", dataset, "--cal-cases", str(classes)])
    assert out.returncode == 0 and record["spec"].n_cal == classes


@pytest.fixture()
def adapters_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary data/adapters/ (Gemma shown as not installed, so nothing is assembled)."""
    shipped = tmp_path / "adapters"
    shipped.mkdir()
    monkeypatch.setattr(runtime.adapters, "shipped_adapters_dir", lambda: shipped)
    monkeypatch.setattr(runtime.registry, "shipped_adapters_dir", lambda: shipped)
    monkeypatch.setattr(runtime.registry, "_GEMMA3_PACKAGE", "no_such_gemma_package")
    return shipped


def test_a_base_model_in_the_adapters_folder_is_skipped_with_a_note(adapters_folder: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    smol = resolve("smollm2-135m")
    os.symlink(smol, adapters_folder / "base-copy.gguf")  # a base model put where adapters go
    write_adapter(adapters_folder / "good.gguf", smol)
    write_adapter(adapters_folder / "misfit.gguf", smol, wrong_rows=True)  # an adapter that does not fit
    with caplog.at_level(logging.WARNING, logger="runtime.registry"):
        out = run_main("dcem_clinical", ["models", "--info"])
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    lines = out.stdout.splitlines()
    assert not any("base-copy" in ln for ln in lines)
    assert "skipping data/adapters/base-copy.gguf: this GGUF file is a model, not a LoRA adapter" in caplog.text
    keys = [ln.split()[0] for ln in lines if ln and not ln.startswith(" ")]
    assert keys == ["smollm2-135m", "gemma3-270m", "smollm2-135m+lora:good", "smollm2-135m+lora:misfit"]
    described = [ln for ln in lines if ln.startswith(" ") and "sha256" in ln]
    assert len(described) == 2 and all("llama" in ln for ln in described)  # the base, and the base of good
    misfit = lines[lines.index(next(ln for ln in lines if ln.startswith("smollm2-135m+lora:misfit"))) + 1]
    assert "cannot describe it: LoRA adapter misfit.gguf: the shapes of" in misfit
