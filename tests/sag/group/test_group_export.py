"""A trained group exported with ``python -m training export`` plays anywhere: its group
file loads as a SAG group whose agents name the exported adapters by registry key, and
those keys resolve to the shipped adapter files."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import runtime.adapters
import runtime.registry
from runtime.registry import resolve, resolve_adapter
from sag.group.config import AgentRole, load_group_file, preset
from tests.runtime.adapter_files import write_adapter
from training.export import read_training_export, write_training_export
from training.store import StepRow, TrainingStore

SMOL = "smollm2-135m"


def test_an_exported_trained_group_loads_and_resolves_its_adapters(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    models, shipped = tmp_path / "models", tmp_path / "shipped"
    monkeypatch.setenv("DCEM_MODELS_DIR", str(models))
    monkeypatch.setenv("DCEM_MODEL_CACHE", str(tmp_path / "cache"))
    for module in (runtime.adapters, runtime.registry):
        monkeypatch.setattr(module, "shipped_adapters_dir", lambda: shipped)
    base = resolve(SMOL)
    run_dir = models / "runs" / "g1"
    run_dir.mkdir(parents=True)
    shipped.mkdir()
    files = {role: write_adapter(run_dir / f"adapter-{role.value}.gguf", base, seed=k, layers=[29])
             for k, role in enumerate((AgentRole.REASONING, AgentRole.JUDGE))}
    group = preset("sag-6")
    backbones = tuple(f"{SMOL}+lora:file:{files[role].resolve()}" if role in files else SMOL for role in AgentRole)
    path = run_dir / "group.json"
    path.write_text(json.dumps(group.with_changes(name="sag-6-ctde-g1", backbones=backbones).to_dict(),
                               indent=2, default=list) + "\n", encoding="utf-8")
    db = tmp_path / "t.duckdb"
    with TrainingStore(db) as store:
        store.start_run("g1", kind="sag-group", method="ctde", base_model=SMOL, settings={"steps": 1},
                        data_name="ddxplus8:train", data_hash="h", n_train=4)
        store.add_step("g1", StepRow(1, 0.1, -0.5, 0.25, 0.01, 0.0, 2, 2500, 3.0))
        store.finish("g1", "finished", str(path), hashlib.sha256(path.read_bytes()).hexdigest())
    with TrainingStore(db, read_only=True) as store:
        write_training_export(store, "g1", tmp_path / "export", shipped, "sag6-ctde", command="c")
    export = read_training_export(tmp_path / "export", shipped)
    assert export.group_file is not None
    cfg = load_group_file(export.group_file)
    assert cfg.name == "sag6-ctde" and cfg.role_counts() == group.role_counts()
    roles = dict(zip(AgentRole, cfg.backbones))
    assert roles[AgentRole.REASONING] == f"{SMOL}+lora:sag6-ctde-reasoning"
    assert roles[AgentRole.JUDGE] == f"{SMOL}+lora:sag6-ctde-judge"
    assert roles[AgentRole.SAFETY] == SMOL
    for role, key in roles.items():
        if role in files:
            info = resolve_adapter(key)
            assert info is not None and info.path == shipped / f"sag6-ctde-{role.value}.gguf"
            assert info.path.read_bytes() == files[role].read_bytes()
