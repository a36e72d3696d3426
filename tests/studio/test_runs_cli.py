"""``python -m studio runs``: shipped exports of every kind imported into one fresh store,
listed, shown, exported again in the one format and reported from that export."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from common.run_export import FORMAT
from studio.runs_cli import main
from tests.common.toy_kind import RUN, ToyStore, registered, run_toy

ROOT = Path(__file__).resolve().parents[2]
# the older formats the kinds still read: a shipped D-CEM run export (clinical runs), a shipped
# training export, and a small SAG store export of a scripted evaluation; the synthetic run is
# run into the store (the full shipped exports take minutes: BENCHMARKS.md, "Importing every
# shipped export")
SHIPPED = {"clinical": "data/results/dcem_clinical", "training": "data/results/training/ddx-views-judge"}
KINDS = ("clinical", "sag", "synthetic", "training")


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def _listed(folder: Path) -> list[str | None]:
    """The run ids an export of an older format holds (None for a run it does not name)."""
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    if "run" in manifest:  # a training export: one run
        return [manifest["run"]["run_id"]]
    if manifest.get("runs"):
        return [r if isinstance(r, str) else r["run_id"] for r in manifest["runs"]]
    return [None] * next(f["rows"] for f in manifest["files"] if f["table"] == "sag_runs")  # a whole store's


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Path]]]:
    from dcem.cli import main as dcem_main
    from tests.sag.evaluation.small_export import small_export

    root = tmp_path_factory.mktemp("runs")
    db = root / "runs.duckdb"
    folders = {kind: ROOT / folder for kind, folder in SHIPPED.items()}
    folders["sag"] = small_export(root)[1]
    for folder in folders.values():
        assert main(["runs", "import", str(folder), "--db", str(db)]) == 0
    assert dcem_main(["run", "synthetic", "--scenarios", "S1", "--seeds", "1", "--n-train", "2000", "--n-eval", "20",
                      "--quiet", "--db", str(db)]) == 0
    yield db, folders


@pytest.fixture(scope="module")
def store(imported: tuple[Path, dict[str, Path]]) -> Path:
    return imported[0]


def test_every_kind_is_listed_after_importing_its_exports(imported: tuple[Path, dict[str, Path]],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    db, folders = imported
    runs = _json(capsys, "runs", "list", "--db", str(db), "--json")
    assert isinstance(runs, list)
    assert {r["kind"] for r in runs} == set(KINDS)
    for kind, folder in folders.items():
        listed = _listed(folder)
        of_kind = {r["run_id"] for r in runs if r["kind"] == kind}
        assert len(of_kind) == len(listed) and {i for i in listed if i} <= of_kind, folder
    assert all(r["status"] == "finished" and r["done"] > 0 and r["what"] for r in runs)
    again = _json(capsys, "runs", "list", "--db", str(db), "--json", "--kind", "training")
    assert [r["kind"] for r in again] == ["training"]  # type: ignore[union-attr]


def test_importing_an_export_again_adds_nothing(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _json(capsys, "runs", "list", "--db", str(store), "--json")
    assert main(["runs", "import", str(ROOT / SHIPPED["training"]), "--db", str(store)]) == 0
    assert "nothing was added" in capsys.readouterr().out
    assert _json(capsys, "runs", "list", "--db", str(store), "--json") == before


@pytest.mark.parametrize("kind", KINDS)
def test_one_run_of_each_kind_exports_in_one_format_and_reports_from_it(
        kind: str, store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = _json(capsys, "runs", "list", "--db", str(store), "--json", "--kind", kind)
    run_id = runs[-1]["run_id"]  # type: ignore[index]
    shown = _json(capsys, "runs", "show", run_id, "--db", str(store), "--json")
    assert shown["kind"] == kind and shown["units_done"] > 0 and shown["page"]  # type: ignore[index]
    out = tmp_path / kind
    assert main(["runs", "export", run_id, "--out", str(out), "--db", str(store), "--command", "a test"]) == 0
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["format"] == FORMAT and manifest["runs"][0]["run_id"] == run_id
    capsys.readouterr()
    assert main(["runs", "report", run_id, "--db", str(store)]) == 0
    from_store = capsys.readouterr().out
    assert main(["runs", "report", "--from-export", str(out)]) == 0
    from_export = capsys.readouterr().out
    assert from_store.strip() and from_export == from_store


def test_bad_input_is_one_line(tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [(["runs", "list", "--db", str(tmp_path / "none.duckdb")], "no store"),
             (["runs", "show", "nope", "--db", str(store)], "no run 'nope'"),
             (["runs", "report", "--db", str(store)], "give a run id or --from-export"),
             (["runs", "import", str(tmp_path), "--db", str(tmp_path / "new.duckdb")], "manifest.json")]
    for argv, message in cases:
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert not (tmp_path / "new.duckdb").exists()


def test_a_test_only_kind_goes_through_the_same_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with registered():
        db = tmp_path / "toy.duckdb"
        with ToyStore(db) as toy:
            run_toy(toy)
        capsys.readouterr()
        assert main(["runs", "list", "--db", str(db)]) == 0
        line = capsys.readouterr().out.strip()
        assert line.startswith(RUN) and "toy" in line and "finished" in line and "5 numbers times 10" in line
        assert main(["runs", "export", RUN, "--out", str(tmp_path / "e"), "--db", str(db)]) == 0
        capsys.readouterr()
        assert main(["runs", "report", "--from-export", str(tmp_path / "e")]) == 0
        assert capsys.readouterr().out.strip() == f"toy run {RUN}: " + ", ".join(f"u{i}={10 * i}" for i in range(5))


def test_the_older_sag_runs_export_imports_its_runs_outcomes(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "t.duckdb"
    assert main(["runs", "import", str(ROOT / "tests/fixtures/sag_runs_export_before_units"), "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["runs", "list", "--db", str(db), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted((r["kind"], r["status"], r["done"]) for r in listed) == [("sag", "finished", 3)] * 2
    assert main(["runs", "import", str(ROOT / "tests/fixtures/sag_runs_export_before_units"), "--db", str(db)]) == 0
    assert "nothing was added" in capsys.readouterr().out


def test_merge_brings_a_part_stores_runs_of_any_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.common.toy_kind import ToyJob, ToySpec

    with registered():
        target, part = tmp_path / "target.duckdb", tmp_path / "part.duckdb"
        with ToyStore(target) as toy:
            with pytest.raises(KeyboardInterrupt):
                run_toy(toy, ToyJob(10, stop_after=2))
        with ToyStore(part) as toy:
            run_toy(toy)
            run_toy(toy, spec=ToySpec(n=2, scale=3))
        assert main(["runs", "merge", str(part), "--db", str(target)]) == 0
        runs = _json(capsys, "runs", "list", "--db", str(target), "--json")
        assert sorted((r["status"], r["done"]) for r in runs) == [("finished", 2), ("finished", 5)]  # type: ignore[union-attr]
        assert main(["runs", "merge", str(part), "--db", str(target)]) == 0
        assert _json(capsys, "runs", "list", "--db", str(target), "--json") == runs


def test_a_clinical_run_with_its_call_log_imports_into_a_fresh_store(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The call log's table is made with the clinical kind's tables (a fresh store has none)."""
    from dcem_clinical.cli import main as clinical_main

    db, out, fresh = tmp_path / "a.duckdb", tmp_path / "export", tmp_path / "fresh.duckdb"
    assert clinical_main(["run", "--dataset", "ddxplus8", "--agents", "stat,stat:lr-evidence", "--cal-cases", "16",
                          "--cases", "8", "--t-max", "2", "--free-rounds", "1", "--quiet", "--db", str(db)]) == 0
    run_id = _json(capsys, "runs", "list", "--db", str(db), "--json")[0]["run_id"]  # type: ignore[index]
    assert main(["runs", "export", run_id, "--out", str(out), "--db", str(db), "--command", "a test"]) == 0
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert any(f["table"] == "llm_calls" and f["rows"] > 0 for f in manifest["files"])
    capsys.readouterr()
    assert main(["runs", "import", str(out), "--db", str(fresh)]) == 0
    assert "llm_calls:" in capsys.readouterr().out
    assert main(["runs", "report", run_id, "--db", str(db)]) == 0
    before = capsys.readouterr().out
    assert main(["runs", "report", run_id, "--db", str(fresh)]) == 0
    assert capsys.readouterr().out == before
    assert main(["runs", "report", "--from-export", str(out)]) == 0
    assert capsys.readouterr().out == before
