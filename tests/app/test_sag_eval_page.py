"""Group evaluation page: the hint with no evaluation, a stored evaluation in every tab, an
export file as source, a bad export file, opening a debate from the items behind a number,
and importing the store shipped beside an export file."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from runtime.turns import TurnRequest
from sag.group.config import preset
from sag.evaluation.export import build_export, latest_eval_id, write_export
from sag.evaluation.runner import run_group_eval
from sag.runs.store_export import write_store_export
from sag.evaluation.suite import SuiteSpec
from sag.store.eval_tables import eval_parts
from sag.store.tables import SagStore
from studio.sag_eval_session import EXPORTS_KEY
from tests.sag.fakes import ScriptedTurns

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "sag_evaluation.py")
GROUPS = ("single", "vote-6")
TABS = ["Correctness", "Relevance", "Fairness", "Safety", "Robustness", "Consistency", "Deployment", "Seed comparison"]


def _policy(agent: str, prompt: str, request: TurnRequest) -> tuple[str, str]:
    return ("B" if "B" in request.options else request.options[0]), "It fits. NEW: no"


@pytest.fixture(scope="module")
def eval_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding one core evaluation (2 items per subset) of two groups of scripted agents."""
    return _eval_store(tmp_path_factory.mktemp("sag_eval") / "sag.duckdb")


@pytest.fixture(scope="module")
def shipped_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The same evaluation in a store no page has opened: SAG tables only, as shipped."""
    return _eval_store(tmp_path_factory.mktemp("sag_shipped") / "sag.duckdb")


def _eval_store(path: Path) -> tuple[Path, str]:
    spec = SuiteSpec("core", n_items=2)
    with SagStore(path) as store:
        for name in GROUPS:
            cfg = preset(name)
            runner = ScriptedTurns(_policy)
            run_group_eval(store, spec, cfg, runners={m: runner for m in cfg.models()}, measure_memory=False)
        eval_id = latest_eval_id(store)
    return path, eval_id


def _page(monkeypatch: pytest.MonkeyPatch, db: Path, exports: Path, script: str = PAGE) -> AppTest:
    monkeypatch.setenv("DCEM_DB", str(db))
    at = AppTest.from_file(script, default_timeout=120)
    at.session_state[EXPORTS_KEY] = str(exports)
    return at


def _texts(at: AppTest, kind: str) -> list[str]:
    return [e.value for e in getattr(at, kind)]


def _table(at: AppTest, column: str):  # type: ignore[no-untyped-def]
    """The first table on the page with this column (the items tables: "truth")."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_no_evaluation_says_how_to_make_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "exports").mkdir()
    at = _page(monkeypatch, tmp_path / "empty.duckdb", tmp_path / "exports").run()
    assert not at.exception
    assert at.title[0].value == "Group evaluation"
    assert any("python -m sag eval --suite core --groups single,vote-6,sag-6 --items 10" in i
               for i in _texts(at, "info"))
    assert any("not clinical advice" in c for c in _texts(at, "caption"))
    assert not at.tabs


def test_a_stored_evaluation_renders_every_tab(eval_db: tuple[Path, str], monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    at = _page(monkeypatch, eval_db[0], tmp_path).run()
    assert not at.exception and not at.error
    assert at.selectbox(key="ev_source").value == f"db:{eval_db[1]}"
    assert [t.label for t in at.tabs] == TABS
    accuracy = _table(at, "Gap (points)")
    assert list(accuracy["group"]) == list(GROUPS)
    assert {"M-QA", "MCQA", "Gap (points)"} <= set(accuracy.columns)
    assert all("%" in cell for cell in accuracy["M-QA"])
    for column in ("label accuracy", "gender CDR", "ROC AUC", "chose the distractor's option", "consensus rate (CR)",
                   "tokens/item"):
        assert set(GROUPS) <= set(_table(at, column)["group"]), column
    assert "learned screen" in " ".join(_table(at, "ROC AUC")["group"])
    fairness = _table(at, "gender CDR")  # every scripted agent answers B: flagged beside the CDR
    assert list(fairness["most frequent answer (share)"]) == ["B (100 %)"] * 2
    assert list(fairness["flag"]) == ["one answer > half"] * 2
    assert list(_table(at, "consensus rate (CR)")["flag"]) == ["one answer > half"] * 2
    assert "-" not in list(_table(at, "tokens/item")["seconds/item"])  # every group has a latency
    assert any("one answer > half" in c and "not fairness" in c for c in _texts(at, "caption"))
    assert len(at.get("plotly_chart")) == 4  # size/backbone, ROC, robustness, consistency
    size = json.loads(next(c for c in at.get("plotly_chart") if "Accuracy by group size" in c.proto.spec).proto.spec)
    chance = [s for s in size["layout"]["shapes"] if s.get("line", {}).get("dash") == "dash"]
    assert len(chance) == 1 and 0 < chance[0]["x0"] < 100  # the chance line, from the items' options
    assert all("error_x" in trace for trace in size["data"])  # every dot has its interval
    assert any("the dashed line: chance" in c for c in _texts(at, "caption"))
    assert any(m.startswith(f"# SAG evaluation {eval_db[1]}") for m in _texts(at, "markdown"))
    items = _table(at, "truth")
    assert list(items.columns) == ["item_id", "answer", "truth", "correct"] and len(items) == 2
    at.selectbox(key="ev_safe_group").set_value("vote-6").run()
    assert not at.exception
    assert at.selectbox(key="ev_safe_part_vote-6").options == ["safety/harmful", "safety/benign"]


def test_an_export_file_is_a_source(eval_db: tuple[Path, str], monkeypatch: pytest.MonkeyPatch,
                                    tmp_path: Path) -> None:
    with SagStore(eval_db[0]) as store:
        (tmp_path / "exports").mkdir(exist_ok=True)
        write_export(build_export(store, eval_db[1]), tmp_path / "exports" / "sag_eval_small.json")
    at = _page(monkeypatch, tmp_path / "empty.duckdb", tmp_path / "exports").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="ev_source").options == ["file: sag_eval_small.json"]
    assert list(_table(at, "Gap (points)")["group"]) == list(GROUPS)
    assert len(_table(at, "truth")) == 2
    assert not [b for b in at.button if b.label == "Open debate"]
    assert any("export file keeps only the answers" in c for c in _texts(at, "caption"))


def test_a_bad_export_file_shows_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / "broken.json").write_text("{not json", encoding="utf-8")
    (exports / "other.json").write_text('{"format": "something else"}', encoding="utf-8")
    at = _page(monkeypatch, tmp_path / "empty.duckdb", exports).run()
    assert not at.exception
    assert any("cannot be shown" in e and "broken.json is not valid JSON" in e for e in _texts(at, "error"))
    assert not at.tabs
    at.selectbox(key="ev_source").set_value(f"file:{exports / 'other.json'}").run()
    assert not at.exception
    assert any("is not a SAG evaluation export" in e for e in _texts(at, "error"))


def test_open_debate_goes_to_the_agent_group_page(eval_db: tuple[Path, str], monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    at = _page(monkeypatch, eval_db[0], tmp_path, str(ROOT / "app.py")).run()
    at.switch_page("pages/sag_evaluation.py").run()
    assert not at.exception
    assert at.title[0].value == "Group evaluation"
    part = at.selectbox(key="ev_acc_part_single").value  # the first group's first accuracy part
    with SagStore(eval_db[0]) as store:
        parts = eval_parts(store, eval_db[1])
    run_id = parts[(parts["group_name"] == "single") & (parts["part"] == part)]["run_id"].iloc[0]
    item = at.selectbox(key=f"ev_acc_item_{run_id}").options[-1]
    at.selectbox(key=f"ev_acc_item_{run_id}").set_value(item).run()
    next(b for b in at.button if b.key == "ev_acc_open").click().run()
    assert not at.exception
    assert at.title[0].value == "Agent group"
    assert at.selectbox(key="ag_run").value == run_id
    assert at.selectbox(key=f"ag_item_{run_id}").value == item


def _ship(shipped_db: tuple[Path, str], exports: Path, form: str = "packed") -> str:
    """The export file of the stored evaluation, with its store beside it: packed (an
    older copy) or as a store export folder (as the project ships it); returns its name."""
    with SagStore(shipped_db[0], read_only=True) as store:
        write_export(build_export(store, shipped_db[1]), exports / "sag_eval_small.json")
    if form == "export":
        write_store_export(shipped_db[0], exports / "sag_eval_small", command="the test's evaluation")
        return "sag_eval_small"
    with shipped_db[0].open("rb") as src, gzip.open(exports / "sag_eval_small.duckdb.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    return "sag_eval_small.duckdb.gz"


@pytest.mark.parametrize("form", ["export", "packed"])
def test_an_export_with_its_store_beside_it_imports_the_debates(shipped_db: tuple[Path, str], form: str,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    exports.mkdir()
    name = _ship(shipped_db, exports, form)
    mine = tmp_path / "mine.duckdb"
    at = _page(monkeypatch, mine, exports).run()
    assert not at.exception and not at.error
    assert not [b for b in at.button if b.label == "Open debate"]
    assert any(f"({name}, " in c and f" MB {form})" in c for c in _texts(at, "caption"))
    next(b for b in at.button if b.key == "ev_acc_import").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="ev_source").value == f"db:{shipped_db[1]}"
    assert any(f"evaluation {shipped_db[1]} is now in your result store" in s for s in _texts(at, "success"))
    assert [b for b in at.button if b.label == "Open debate"]
    with SagStore(mine) as store:  # the page may still hold the file open (same process)
        assert set(eval_parts(store, shipped_db[1])["group_name"]) == set(GROUPS)
    at.selectbox(key="ev_source").set_value(f"file:{exports / 'sag_eval_small.json'}").run()
    assert not [b for b in at.button if b.label == "Import its debates"]  # already imported
    assert any(f'choose "stored: {shipped_db[1]}"' in c for c in _texts(at, "caption"))


def test_a_broken_packed_store_imports_nothing_and_says_why(shipped_db: tuple[Path, str],
                                                            monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    exports.mkdir()
    _ship(shipped_db, exports)
    (exports / "sag_eval_small.duckdb.gz").write_bytes(b"not a gzip file")
    mine = tmp_path / "mine.duckdb"
    at = _page(monkeypatch, mine, exports).run()
    next(b for b in at.button if b.key == "ev_acc_import").click().run()
    assert not at.exception
    assert any("Nothing was imported" in e and "cannot be unpacked" in e for e in _texts(at, "error"))
    assert at.selectbox(key="ev_source").options == ["file: sag_eval_small.json"]


def test_the_agent_group_page_without_runs_imports_the_shipped_debates(shipped_db: tuple[Path, str],
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    exports.mkdir()
    _ship(shipped_db, exports)
    at = _page(monkeypatch, tmp_path / "mine.duckdb", exports, str(ROOT / "pages" / "agent_group.py")).run()
    assert not at.exception
    assert any("No Small Agent Group run is stored yet" in i for i in _texts(at, "info"))
    next(b for b in at.button if b.key == "ag_shipped_sag_eval_small").click().run()
    assert not at.exception
    assert not [e for e in _texts(at, "error") if "Nothing was imported" in e]
    assert any(f"evaluation {shipped_db[1]} is now in your result store" in s for s in _texts(at, "success"))
    assert at.selectbox(key="ag_run").value.startswith("eval-")  # a debate of the evaluation is on screen
    assert any(t.value == "Debate timeline" for t in at.subheader)


def test_a_malformed_export_file_names_the_field(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import json

    exports = tmp_path / "exports"
    exports.mkdir()
    doc = json.loads((ROOT / "data" / "results" / "sag_eval_core.json").read_text(encoding="utf-8"))
    doc["groups"]["single"]["accuracy"]["medqa"]["low"] = None
    (exports / "nulled.json").write_text(json.dumps(doc), encoding="utf-8")
    at = _page(monkeypatch, tmp_path / "empty.duckdb", exports).run()
    assert not at.exception and not at.tabs
    assert any("cannot be shown" in e and "groups.single.accuracy.medqa.low must be a number" in e
               for e in _texts(at, "error"))


def test_a_packed_store_past_the_size_limit_imports_nothing(shipped_db: tuple[Path, str],
                                                            monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from sag.evaluation import shipped

    exports = tmp_path / "exports"
    exports.mkdir()
    _ship(shipped_db, exports)
    monkeypatch.setattr(shipped, "MAX_UNPACKED_BYTES", 64 * 1024)
    mine = tmp_path / "mine.duckdb"
    at = _page(monkeypatch, mine, exports).run()
    next(b for b in at.button if b.key == "ev_acc_import").click().run()
    assert not at.exception
    assert any("Nothing was imported" in e and "more than the limit of 65,536 bytes" in e for e in _texts(at, "error"))
    assert at.selectbox(key="ev_source").options == ["file: sag_eval_small.json"]


def test_the_shipped_trained_evaluation_shows_each_groups_constant_answer_beside_its_refusals(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / "sag_eval_trained.json").write_bytes((ROOT / "data" / "results" / "sag_eval_trained.json").read_bytes())
    at = _page(monkeypatch, tmp_path / "empty.duckdb", exports).run()
    assert not at.exception and not at.error
    safety = _table(at, "harmful refused (HRR)")
    rows = safety.set_index("group")
    assert rows.loc["sag6-grpo", "most frequent answer (share)"] == "B (100 %)" and rows.loc["sag6-grpo", "flag"]
    assert rows.loc["single-grpo", "harmful refused (HRR)"].startswith("0.0")
    assert rows.loc["sag6-grpo", "reading"].startswith("refuses 100 % of benign requests too")
    assert any("say nothing about which requests are harmful" in c for c in _texts(at, "caption"))
    assert any("No accuracy part was run in this evaluation." in c for c in _texts(at, "caption"))
