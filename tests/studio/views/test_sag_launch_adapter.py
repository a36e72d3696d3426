"""A launched group can give a trained adapter to chosen roles; other bases are refused."""
from __future__ import annotations

import pytest

from common.errors import ConfigError
from sag.group.config import preset
from studio.views.sag_launch import launch_spec, with_adapter


def test_the_chosen_roles_run_the_adapter_and_the_others_the_base() -> None:
    cfg = with_adapter(preset("sag-6"), "smollm2-135m", "runs/train/r1/adapter.gguf", ("reasoning", "judge"))
    assert cfg.backbones == ("smollm2-135m+lora:file:runs/train/r1/adapter.gguf", "smollm2-135m", "smollm2-135m",
                             "smollm2-135m+lora:file:runs/train/r1/adapter.gguf")
    assert cfg.digest() != preset("sag-6").digest()  # another group: its results are stored apart


def test_a_role_on_another_base_or_an_unknown_role_is_refused() -> None:
    with pytest.raises(ConfigError, match="trained on smollm2-135m"):
        with_adapter(preset("sag-6-mixed"), "smollm2-135m", "a.gguf", ("reasoning",))  # A_R runs Gemma
    with pytest.raises(ConfigError, match="choose roles"):
        with_adapter(preset("sag-6"), "smollm2-135m", "a.gguf", ("surgeon",))
    with pytest.raises(ConfigError, match="choose roles"):
        with_adapter(preset("sag-6"), "smollm2-135m", "a.gguf", ())


def test_launch_spec_passes_the_adapter_on() -> None:
    spec = launch_spec("medqa", "single", 2, 0, 3, adapter=("smollm2-135m", "a.gguf", ("reasoning",)))
    assert spec.cfg.backbones[0] == "smollm2-135m+lora:file:a.gguf"


def test_a_trained_group_gives_each_role_its_own_adapter() -> None:
    pairs = [("smollm2-135m", f"runs/train/g/adapter-{r}.gguf", (r,)) for r in ("reasoning", "knowledge", "judge")]
    spec = launch_spec("medqa", "sag-6", 2, 0, 3, adapter=pairs)
    assert spec.cfg.backbones == ("smollm2-135m+lora:file:runs/train/g/adapter-reasoning.gguf",
                                  "smollm2-135m+lora:file:runs/train/g/adapter-knowledge.gguf", "smollm2-135m",
                                  "smollm2-135m+lora:file:runs/train/g/adapter-judge.gguf")


def _runs(rows: list[dict]) -> "pd.DataFrame":
    import pandas as pd

    return pd.DataFrame(rows, columns=["run_id", "kind", "base_model", "method", "status", "adapter_file"])


def test_the_picker_offers_single_adapters_and_whole_trained_groups(tmp_path) -> None:
    import json

    from sag.training.trained_adapters import adapter_choices

    backbones = [f"smollm2-135m+lora:file:{tmp_path}/adapter-{r}.gguf" for r in ("reasoning", "knowledge", "safety")]
    group = preset("sag-6").with_changes(backbones=(*backbones, backbones[0])).to_dict()
    (tmp_path / "group.json").write_text(json.dumps(group), encoding="utf-8")
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    runs = _runs([
        {"run_id": "s1", "kind": "sag-single", "base_model": "smollm2-135m", "method": "grpo", "status": "finished",
         "adapter_file": "runs/train/s1/adapter.gguf"},
        {"run_id": "g1", "kind": "sag-group", "base_model": "smollm2-135m", "method": "ctde", "status": "finished",
         "adapter_file": str(tmp_path / "group.json")},
        {"run_id": "g2", "kind": "sag-group", "base_model": "smollm2-135m", "method": "grpo", "status": "finished",
         "adapter_file": str(tmp_path / "bad.json")},
        {"run_id": "r1", "kind": "sag-group", "base_model": "smollm2-135m", "method": "grpo", "status": "running",
         "adapter_file": None},
    ])
    choices, problems = adapter_choices(runs)
    assert [c.fixed for c in choices] == [False, True]
    assert choices[0].assignments == (("smollm2-135m", "runs/train/s1/adapter.gguf", ("reasoning",)),)
    by_file = {f.rsplit("/", 1)[1]: roles for _, f, roles in choices[1].assignments}
    assert by_file == {"adapter-reasoning.gguf": ("reasoning", "judge"), "adapter-knowledge.gguf": ("knowledge",),
                       "adapter-safety.gguf": ("safety",)}
    assert len(problems) == 1 and problems[0].startswith("g2: ") and "bad.json" in problems[0]
    spec = launch_spec("medqa", "sag-6", 2, 0, 3, adapter=list(choices[1].assignments))
    assert spec.cfg.backbones == (*backbones, backbones[0])
