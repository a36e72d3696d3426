"""Agent group page: the hint with no run, a stored debate and a D-CEM run, switching items
and runs, comparing two runs, launching a run with scripted agents, bad launches, and typed
launch fields that block Run while invalid ("2,5" is refused, never read as 25)."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from runtime.backends import BackendError
from sag.group.config import GroupConfig
from sag.store.tables import SagStore
from studio.sag_session import MODELS_KEY
from tests.sag.fakes import ScriptedTurns, constant
from tests.sag.group_runs import build_group_runs

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "agent_group.py")


@pytest.fixture(scope="module")
def sag_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("agent_group") / "sag.duckdb"
    runs = build_group_runs(path, tmp_path_factory.mktemp("idx"))
    return path, {name: s.run_id for name, s in runs.items()}


@pytest.fixture()
def page(sag_db: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("DCEM_DB", str(sag_db[0]))
    return AppTest.from_file(PAGE, default_timeout=60)


def _texts(at: AppTest, kind: str) -> list[str]:
    return [e.value for e in getattr(at, kind)]


def _item_box(at: AppTest):  # type: ignore[no-untyped-def]
    return next(s for s in at.selectbox if s.label == "Item")


def _run_button(at: AppTest):  # type: ignore[no-untyped-def]
    return next(b for b in at.button if b.label == "Run")


def test_no_run_says_how_to_make_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DCEM_DB", str(tmp_path / "empty.duckdb"))
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    assert any("python -m sag run --benchmark medqa --group sag-6 --items 20" in i for i in _texts(at, "info"))
    assert any("not clinical advice" in c and "REFUSE or ESCALATE" in c for c in _texts(at, "caption"))


def test_a_dcem_run_and_a_debate_render(page: AppTest, sag_db: tuple[Path, dict[str, str]]) -> None:
    ids = sag_db[1]
    at = page.run()
    assert not at.exception
    assert at.selectbox(key="ag_run").value == ids["dcem"]  # the newest run first
    assert len(at.selectbox(key="ag_run").options) == 3
    assert all("3/3 answered" in label for label in at.selectbox(key="ag_run").options)
    assert len(at.get("plotly_chart")) == 2  # distributions and the D-CEM energy/action chart
    lanes = [m for m in _texts(at, "markdown") if m.startswith("**") and m.endswith("agents (A_R)**")]
    assert lanes == ["**Reasoning agents (A_R)**"]
    assert any(m.startswith("**R1** → **") for m in _texts(at, "markdown"))
    assert any("The group answered" in m for m in _texts(at, "info") + _texts(at, "warning"))
    assert not any("The group answered" in m for m in _texts(at, "success") + _texts(at, "error"))
    at.selectbox(key="ag_run").set_value(ids["sag"]).run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 1
    frames = [d.value for d in at.dataframe]
    assert len(frames) == 3  # passages, flags, judges
    assert list(frames[0].columns[:5]) == ["passage_id", "corpus", "score", "round", "retrieved_by"]
    assert list(frames[1].columns) == ["round", "agent", "flag"] and "rationale" in frames[2].columns
    markdown = _texts(at, "markdown")
    assert any(m.startswith("**K1** searched: mlp-") for m in markdown)
    assert any(":red[FLAG: check the dose before acting]" in m for m in markdown)
    assert any("Synthesis and judge agents" in m for m in markdown)


def test_switching_items_changes_the_outcome(page: AppTest, sag_db: tuple[Path, dict[str, str]]) -> None:
    at = page.run()
    at.selectbox(key="ag_run").set_value(sag_db[1]["sag"]).run()
    items = _item_box(at).options
    assert len(items) == 3
    before = [e for e in _texts(at, "info") if "The group answered" in e]
    with SagStore(sag_db[0]) as store:
        last = store.outcomes(sag_db[1]["sag"])["item_id"].iloc[2]
    _item_box(at).set_value(last).run()
    assert not at.exception
    after = [e for e in _texts(at, "info") if "The group answered" in e]
    assert before and after and before != after  # another truth letter in the outcome line


def test_compare_shows_both_accuracies(page: AppTest, sag_db: tuple[Path, dict[str, str]]) -> None:
    ids = sag_db[1]
    at = page.run()
    at.selectbox(key="ag_cmp_a").set_value(ids["sag"]).run()
    at.selectbox(key="ag_cmp_b").set_value(ids["majority"]).run()
    assert not at.exception
    versus = next(d.value for d in at.dataframe if "Chance" in d.value.columns)
    assert versus["Accuracy"].tolist() == pytest.approx([0.0, 1 / 3]) and len(versus) == 2
    assert versus["Run"].iloc[0].startswith("A: ") and versus["Chance"].iloc[0] > 0
    assert "Most frequent answer" in versus.columns and "Best single letter" in versus.columns
    assert any("3 common item(s)" in m for m in _texts(at, "markdown"))
    at.selectbox(key="ag_cmp_b").set_value(ids["dcem"]).run()
    assert any("no item in common" in m for m in _texts(at, "markdown"))
    assert not any("Chance" in d.value.columns for d in at.dataframe)


def test_the_page_says_what_the_packaged_models_can_do_and_opens_on_a_comparable_pair(
        page: AppTest, sag_db: tuple[Path, dict[str, str]]) -> None:
    at = page.run()
    note = next(i for i in _texts(at, "info") if i.startswith("What the packaged models can do"))
    assert "chance" in note and "cannot answer clinical questions" in note
    ids = sag_db[1]
    at.selectbox(key="ag_cmp_a").set_value(ids["sag"]).run()  # B follows: the run sharing its items
    assert at.selectbox(key="ag_cmp_b").value == ids["majority"]
    assert any("3 common item(s)" in m for m in _texts(at, "markdown"))


def _scripted(cfg: GroupConfig) -> tuple[dict[str, ScriptedTurns], dict[str, object]]:
    return {m: ScriptedTurns(constant("B")) for m in cfg.models()}, {}


def test_launch_stores_a_new_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    db = tmp_path / "launch.duckdb"
    monkeypatch.setenv("DCEM_DB", str(db))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state[MODELS_KEY] = _scripted
    at.run()
    at.text_input(key="ag_items").input("2")
    at.text_input(key="ag_tmax").input("1").run()
    assert any("No sag-6 item has been answered in this store yet" in c for c in _texts(at, "caption"))
    _run_button(at).click().run()
    assert not at.exception
    assert any("2 item(s) answered now of 2" in s for s in _texts(at, "success"))
    bar = at.get("progress")[-1].proto
    assert "turns played" in bar.text and int(bar.text.split(" turns played")[0].rsplit(" ", 1)[1]) > 0
    at.run()  # the next page run estimates from the items just answered
    assert any(c.startswith("Measured here: one sag-6 item took a median of") for c in _texts(at, "caption"))
    with SagStore(db) as store:
        runs = store.runs()
    assert len(runs) == 1 and runs["answered"].iloc[0] == 2 and runs["group_name"].iloc[0] == "sag-6"
    assert at.selectbox(key="ag_run").value == runs["run_id"].iloc[0]
    assert len(_item_box(at).options) == 2


@pytest.mark.parametrize(("key", "typed", "words"), [
    ("ag_seed", "abc", "Seed: “abc” is not a whole number: enter a whole number from 0 to 2147483647."),
    ("ag_seed", "2,5", "Seed: “2,5” is not a whole number (no commas or decimal points)"),
    ("ag_items", "0", "Items must be from 1 to 50; got 0."),
    ("ag_tmax", "11", "Rounds after round 0 (t_max) must be from 1 to 10; got 11."),
])
def test_an_invalid_field_blocks_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, key: str, typed: str,
                                     words: str) -> None:
    db = tmp_path / "invalid.duckdb"
    monkeypatch.setenv("DCEM_DB", str(db))
    calls: list[GroupConfig] = []

    def recorded(cfg: GroupConfig) -> tuple[dict[str, ScriptedTurns], dict[str, object]]:
        calls.append(cfg)
        return _scripted(cfg)

    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state[MODELS_KEY] = recorded
    at.run()
    assert not _run_button(at).disabled and not at.error
    at.text_input(key=key).input(typed)
    _run_button(at).click().run()  # typed and pressed at once, as when Run is clicked straight from the field
    assert not at.exception
    assert any(e.value.startswith(words) for e in at.error), [e.value for e in at.error]
    assert _run_button(at).disabled
    at.run()  # the pressed Run of the run before is not replayed
    assert _run_button(at).disabled and calls == [] and not at.success and "ag_run" not in at.session_state
    with SagStore(db) as store:
        assert store.runs().empty
    at.text_input(key=key).input({"ag_seed": "7", "ag_items": "1", "ag_tmax": "1"}[key]).run()
    assert not at.error and not _run_button(at).disabled  # fixed, Run is back


def test_bad_launches_show_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    db = tmp_path / "bad.duckdb"
    monkeypatch.setenv("DCEM_DB", str(db))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state[MODELS_KEY] = _scripted
    at.run()
    at.selectbox(key="ag_bench").set_value("mmlu-pro-health")
    at.selectbox(key="ag_group").set_value("sag-6-dcem")
    _run_button(at).click().run()
    assert not at.exception
    assert any("could not be made" in e and "same number of options" in e for e in _texts(at, "error"))

    def broken(cfg: GroupConfig) -> tuple[None, None]:
        raise BackendError("smollm2-135m: the model file cannot be loaded")

    at.session_state[MODELS_KEY] = broken
    at.selectbox(key="ag_bench").set_value("medqa")
    at.selectbox(key="ag_group").set_value("single")
    _run_button(at).click().run()
    assert not at.exception
    assert any("cannot be loaded" in e for e in _texts(at, "error"))
    with SagStore(db) as store:
        assert store.runs().empty
    assert any("python -m sag run" in i for i in _texts(at, "info"))


def test_agent_group_page_is_in_the_navigation(sag_db: tuple[Path, dict[str, str]],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_DB", str(sag_db[0]))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("pages/agent_group.py").run()
    assert not at.exception
    assert at.title[0].value == "Agent group"
    assert at.selectbox(key="ag_run").value == sag_db[1]["dcem"]


@pytest.mark.slow
def test_a_launch_on_ray_stores_the_run_with_smollm2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Where the units run: Ray. Two local workers each load SmolLM2 and answer the items;
    the page alone writes them, and says how many it answered."""
    db = tmp_path / "ray.duckdb"
    monkeypatch.setenv("DCEM_DB", str(db))
    at = AppTest.from_file(PAGE, default_timeout=300).run()
    at.selectbox(key="ag_group").set_value("single")
    at.radio(key="ag_executor").set_value("ray")
    at.text_input(key="ag_items").input("2")
    at.text_input(key="ag_tmax").input("1").run()
    _run_button(at).click().run()
    assert not at.exception
    assert any("2 item(s) answered now of 2" in s for s in _texts(at, "success"))
    with SagStore(db) as store:
        runs = store.runs()
        assert len(runs) == 1 and runs["answered"].iloc[0] == 2 and runs["group_name"].iloc[0] == "single"
        assert store.con.execute("SELECT count(*) FROM llm_calls WHERE run_id = ?",
                                 [runs["run_id"].iloc[0]]).fetchone()[0] > 0  # the workers' calls, logged here
