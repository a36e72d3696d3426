"""Models page: registry and metadata, GPU setting, a real test prompt, Hub look-ups offline."""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from common.errors import ConfigError
from runtime.registry import resolve
from studio.views.model_lab_view import MAX_CASE_CHARS, TEST_LABELS, default_gpu_layers, validate_gpu_layers
from studio.views.session_keys import GPU_LAYERS as GPU_LAYERS_KEY
from tests.runtime.test_models import _fake_hub

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "models.py")
SMOL_SHA_PREFIX = "b179c952"


@pytest.fixture(autouse=True)
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private model cache and an empty Hub cache, with the Hub switched off."""
    hub = tmp_path / "hf" / "hub"
    monkeypatch.setenv("DCEM_MODEL_CACHE", str(tmp_path / "model-cache"))
    monkeypatch.setenv("DCEM_MODELS_DIR", str(tmp_path))  # file: keys may name files here
    monkeypatch.delenv("HF_HOME", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return hub


@pytest.fixture()
def page() -> AppTest:
    return AppTest.from_file(PAGE, default_timeout=120).run()


def _errors(at: AppTest) -> list[str]:
    return [re.sub(r"\\(.)", r"\1", e.value) for e in at.error]  # the text the escaped Markdown shows


def _run_prompt(at: AppTest, *, key: str = "", text: str | None = None) -> AppTest:
    at.text_input(key="models_test_key").set_value(key)
    if text is not None:
        at.text_area(key="models_test_text").set_value(text)
    return at.button(key="models_test_run").click().run()


def test_page_lists_the_registry_with_the_disclaimer(page: AppTest) -> None:
    assert not page.exception
    registry = page.dataframe[0].value
    assert registry["key"].iloc[0] == "smollm2-135m"
    assert list(registry.columns) == ["key", "name", "source", "licence", "installed", "note"]
    assert registry.set_index("key").loc["smollm2-135m", "licence"] == "Apache-2.0"
    assert any("not clinical advice" in c.value for c in page.caption)
    assert "smollm2-135m" in page.selectbox(key="models_test_model").options


def _frame(at: AppTest, column: str) -> pd.DataFrame:
    """The page's table with ``column`` (the Models page also shows training tables)."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert found, f"no table with a {column!r} column"
    return found[-1]


def test_metadata_on_request(page: AppTest) -> None:
    assert not [d for d in page.dataframe if "field" in d.value.columns]  # nothing read before the button
    page.button(key="models_meta_smollm2-135m").click().run()
    assert not page.exception and not _errors(page)
    facts = dict(zip(_frame(page, "field")["field"], _frame(page, "field")["value"]))
    assert facts["sha256"].startswith(SMOL_SHA_PREFIX)
    assert facts["architecture"] == "llama" and facts["quantization"] == "Q4_1"
    assert facts["context length"] == "8,192" and facts["parameters"] == "134,515,008"
    assert facts["size"].startswith("98.4 MB")


def test_gpu_setting_defaults_and_refuses_invalid_values(page: AppTest) -> None:
    assert page.session_state[GPU_LAYERS_KEY] == default_gpu_layers()
    assert any("GPU offload" in c.value for c in page.caption)
    page.number_input(key="models_gpu_input").set_value(-5).run()
    assert not page.exception
    assert any("Refused" in e and "n_gpu_layers" in e for e in _errors(page))
    assert page.session_state[GPU_LAYERS_KEY] == default_gpu_layers()
    page.number_input(key="models_gpu_input").set_value(0).run()
    assert not _errors(page) and page.session_state[GPU_LAYERS_KEY] == 0


def test_validate_gpu_layers() -> None:
    assert [validate_gpu_layers(v) for v in (-1, 0, 12, 3.0)] == [-1, 0, 12, 3]
    for bad in (-2, 2.5, True, "3", None):
        with pytest.raises(ConfigError, match="n_gpu_layers"):
            validate_gpu_layers(bad)


def test_test_prompt_with_the_packaged_model(page: AppTest) -> None:
    at = _run_prompt(page)
    assert not at.exception and not _errors(at)
    table = _frame(at, "label")
    assert sorted(table["label"]) == sorted(TEST_LABELS)
    assert table["probability"].is_monotonic_decreasing  # most probable first
    assert table["probability"].sum() == pytest.approx(1.0, abs=1e-9)
    assert (table["probability"] > 0).all()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Most probable"] == table.loc[table["probability"].idxmax(), "label"] == table["label"].iloc[0]
    assert metrics["Load time"].endswith(" s") and metrics["Answer time"].endswith(" s")
    again = _run_prompt(at)  # the second prompt reuses the loaded model
    assert next(m for m in again.metric if m.label == "Load time").delta == "already loaded"


@pytest.mark.parametrize("content, message", [(b"GGUF\x03\x00\x00\x00" + b"junk" * 16, "cannot load junk.gguf"),
                                              (b"just some text", "not a GGUF model file")])
def test_bad_model_file_gives_an_error(page: AppTest, tmp_path: Path, content: bytes, message: str) -> None:
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(content)
    at = _run_prompt(page, key=f"file:{junk}")
    assert not at.exception
    errors = _errors(at)
    assert len(errors) == 1 and errors[0].startswith("Test prompt failed:") and message in errors[0]
    assert not at.metric


def test_over_long_or_empty_text_is_refused(page: AppTest) -> None:
    at = _run_prompt(page, text="x" * (MAX_CASE_CHARS + 1))
    assert not at.exception
    assert any("too long" in e for e in _errors(at)) and not at.metric
    at = _run_prompt(at, text="   ")
    assert any("case text" in e for e in _errors(at))


def test_hub_download_offline_says_so(page: AppTest) -> None:
    assert any("HF_HUB_OFFLINE is set" in c.value for c in page.caption)
    page.text_input(key="models_hf_repo").set_value("someone/absent-gguf")
    page.text_input(key="models_hf_file").set_value("model.Q4_K_M.gguf")
    at = page.button(key="models_hf_get").click().run()
    assert not at.exception
    errors = _errors(at)
    assert len(errors) == 1
    assert "not in the local Hub cache" in errors[0] and "HF_HUB_OFFLINE" in errors[0]
    at.text_input(key="models_hf_file").set_value("").run()
    at.button(key="models_hf_get").click().run()
    assert any("give both the repository" in e for e in _errors(at))


def test_hub_file_from_the_local_cache_joins_the_lists(page: AppTest, offline: Path) -> None:
    _fake_hub(offline, "someone/smol-gguf", "smol.Q4_1.gguf", resolve("smollm2-135m"))
    page.text_input(key="models_hf_repo").set_value("someone/smol-gguf")
    page.text_input(key="models_hf_file").set_value("smol.Q4_1.gguf")
    at = page.button(key="models_hf_get").click().run()
    assert not at.exception and not _errors(at)
    key = "hf:someone/smol-gguf:smol.Q4_1.gguf"
    assert any(s.value.startswith(f"{key} is at ") for s in at.success)
    assert key in at.selectbox(key="models_test_model").options
    at.button(key=f"models_meta_{key}").click().run()
    assert dict(zip(_frame(at, "field")["field"], _frame(at, "field")["value"]))["architecture"] == "llama"


def test_models_page_is_in_the_navigation(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DCEM_DB", str(tmp_path / "none.duckdb"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("pages/models.py").run()
    assert not at.exception
    assert at.title[0].value == "Models"


def _fake_model(monkeypatch: pytest.MonkeyPatch, probabilities: list[float], key: str = "fake-model") -> None:
    """The test prompt answered by a scripted fake model under ``key`` (no weights are loaded)."""
    import math
    import time

    import studio.model_lab
    from studio.views.model_lab_view import LoadedModel
    from runtime.testing import ScriptedBackend

    backend = ScriptedBackend(["A"], scores=lambda messages, options: [math.log(p) for p in probabilities])
    backend.n_gpu_layers = 0  # type: ignore[attr-defined]
    loaded = LoadedModel(key, backend, 0.01, time.monotonic())  # type: ignore[arg-type]
    monkeypatch.setattr(studio.model_lab, "load_model", lambda key, n_gpu_layers: loaded)


def test_test_prompt_table_is_sorted_and_a_clear_answer_has_no_caveat(page: AppTest,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    probs = [0.02, 0.03, 0.05, 0.60, 0.04, 0.10, 0.06, 0.10]
    assert len(probs) == len(TEST_LABELS)
    _fake_model(monkeypatch, probs)
    at = _run_prompt(page, key="fake-model")
    assert not at.exception and not _errors(at)
    table = _frame(at, "label")
    assert list(table["label"])[:2] == [TEST_LABELS[3], TEST_LABELS[5]]  # ties keep the label order
    assert list(table["label"]) == [TEST_LABELS[i] for i in sorted(range(8), key=lambda i: -probs[i])]
    assert table["probability"].tolist() == pytest.approx(sorted(probs, reverse=True))
    assert {m.label: m.value for m in at.metric}["Most probable"] == TEST_LABELS[3]
    assert not any("Near chance" in w.value for w in at.warning)


def test_test_prompt_near_chance_carries_a_caveat(page: AppTest, monkeypatch: pytest.MonkeyPatch) -> None:
    probs = [0.12, 0.13, 0.125, 0.125, 0.14, 0.12, 0.12, 0.12]
    _fake_model(monkeypatch, probs)
    at = _run_prompt(page, key="fake-model")
    assert not at.exception and not _errors(at)
    assert _frame(at, "label")["label"].iloc[0] == TEST_LABELS[4]
    warnings = [w.value for w in at.warning if w.value.startswith("Near chance")]
    assert len(warnings) == 1 and warnings[0].startswith("Near chance: the most probable label has 0.140")
    assert "1/8 = 0.125" in warnings[0] and "span only 0.020" in warnings[0]


def test_a_wrong_answer_on_the_built_in_example_is_flagged_beside_the_measured_accuracy(
        page: AppTest, monkeypatch: pytest.MonkeyPatch) -> None:
    probs = [0.27, 0.03, 0.05, 0.40, 0.04, 0.10, 0.06, 0.05]  # not the myocardial infarction the example describes
    _fake_model(monkeypatch, probs)
    at = _run_prompt(page, key="fake-model")
    flags = [w.value for w in at.warning if w.value.startswith("Wrong on the built-in example")]
    assert len(flags) == 1 and "(NSTEMI_STEMI)" in flags[0] and TEST_LABELS[3] in flags[0]
    assert any(i.value.startswith("No shipped run measures fake-model") for i in at.info)
    right = [0.02, 0.03, 0.60, 0.05, 0.04, 0.10, 0.06, 0.10]
    _fake_model(monkeypatch, right)
    at = _run_prompt(at, key="fake-model")
    assert TEST_LABELS[2] == "NSTEMI_STEMI" and not any("Wrong on the built-in" in w.value for w in at.warning)


def test_the_measured_accuracy_of_a_packaged_model_comes_from_the_shipped_runs() -> None:
    from dcem_clinical.measured_accuracy import measured_text, shipped_accuracy
    from studio.views.model_lab_view import model_file_name

    measured = shipped_accuracy()
    smollm = measured[model_file_name("smollm2-135m")]
    assert 0.0 <= smollm.accuracy <= 1.0 and smollm.answers >= 100 and smollm.chance == 0.125
    text = measured_text("smollm2-135m", model_file_name("smollm2-135m"), measured)
    assert text.startswith("Measured: smollm2-135m is right on") and "chance is 12.5%" in text


DIAGNOSTICIAN = "smollm2-135m+lora:ddxplus8-grpo"


def test_the_diagnostician_adapter_on_the_prose_example_says_it_learned_ddxplus_cases(
        page: AppTest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 51's reproducer: the shipped DDXPlus-8 adapter answered URTI at p = 0.992 on the
    textbook myocardial infarction with no word that it learned DDXPlus's rendered cases, not
    prose, and "No shipped run measures" it while the trio runs it on the symptoms view."""
    probs = [0.001] * 8
    probs[4] = 1 - 0.007  # URTI
    _fake_model(monkeypatch, probs, key=DIAGNOSTICIAN)
    at = _run_prompt(page, key=DIAGNOSTICIAN)
    assert not at.exception and not _errors(at)
    warnings = [w.value for w in at.warning]
    wrong = [w for w in warnings if w.startswith("Wrong on the built-in example")]
    assert len(wrong) == 1 and "URTI" in wrong[0] and "prose, which this adapter never saw" in wrong[0]
    notes = [w for w in warnings if w.startswith(f"This text is not the input {DIAGNOSTICIAN} learned")]
    assert len(notes) == 1 and "2 of the text's 11 findings" in notes[0] and "not on prose" in notes[0]
    info = [i.value for i in at.info if DIAGNOSTICIAN in i.value]
    assert len(info) == 1 and "reading the whole case" in info[0] and "the symptoms view in dcem_clinical_trio" in info[0]


def test_a_rendered_ddxplus_case_gets_no_input_note(page: AppTest, monkeypatch: pytest.MonkeyPatch) -> None:
    from dcem_clinical.train_run import training_cases

    _, held, _ = training_cases("ddxplus8", 1)
    _fake_model(monkeypatch, [0.02, 0.03, 0.60, 0.05, 0.04, 0.10, 0.06, 0.10], key=DIAGNOSTICIAN)
    at = _run_prompt(page, key=DIAGNOSTICIAN, text=held[0].text)
    assert not at.exception
    assert not any("is not the input" in w.value or "Wrong on the built-in" in w.value for w in at.warning)


def test_a_question_adapter_asked_for_a_diagnosis_says_it_was_trained_for_another_task(
        page: AppTest, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "smollm2-135m+lora:sag-single-grpo"
    _fake_model(monkeypatch, [0.02, 0.03, 0.60, 0.05, 0.04, 0.10, 0.06, 0.10], key=key)
    at = _run_prompt(page, key=key)
    assert any(w.value.startswith(f"{key} was trained for another task") for w in at.warning)
