"""Issue 51, item 7: ``python -m dcem export`` wrote no Learn-then-Test run ("runs[0].spec.risk_target:
must be a plain value").  A tiny LTT run in a temporary store exports, reads back with its
target, imports into another store unchanged, and reports from the export; a target no run
would write is refused with one line naming the field."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dcem.cli import main
from dcem.store.database import Store
from dcem.store.run_export import MANIFEST, load_run_export
from dcem.store.run_import import import_run_export

RUN = ["run", "synthetic", "--scenarios", "S1", "--seeds", "1", "--n-train", "3000", "--n-eval", "20",
       "--no-ablation", "--quiet", "--fit", "ltt", "--risk", "system_risk", "--alpha", "0.3"]


@pytest.fixture(scope="module")
def ltt_export(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    root = tmp_path_factory.mktemp("ltt")
    db = str(root / "ltt.duckdb")
    assert main([*RUN, "--db", db]) == 0
    with Store(db, read_only=True) as store:
        run_id = store.latest_run("synthetic")
    out = root / "export"
    assert main(["export", "--db", db, "--run", run_id, "--out", str(out), "--command", "python -m dcem run ..."]) == 0
    return Path(db), run_id, out


def test_an_ltt_run_exports_reads_back_and_imports_with_its_target(ltt_export: tuple[Path, str, Path],
                                                                   tmp_path: Path) -> None:
    db, run_id, out = ltt_export
    with Store(db, read_only=True) as store:
        spec = json.loads(store.con.execute("SELECT spec_json FROM runs WHERE run_id = ?", [run_id]).fetchone()[0])
        metrics = store.metrics(run_id)
    export = load_run_export(out)
    assert export.run_ids == [run_id]
    assert export.run(run_id)["spec"] == spec
    assert export.run(run_id)["spec"]["risk_target"]["risk"] == "system_risk"
    assert export.run(run_id)["spec"]["risk_target"]["alpha"] == 0.3
    with Store(tmp_path / "other.duckdb") as other:
        assert import_run_export(other, out) == [run_id]
        again = json.loads(other.con.execute("SELECT spec_json FROM runs WHERE run_id = ?", [run_id]).fetchone()[0])
        assert again == spec
        assert len(other.metrics(run_id)) == len(metrics)


def test_the_report_reads_the_ltt_export(ltt_export: tuple[Path, str, Path],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    _, run_id, out = ltt_export
    capsys.readouterr()
    assert main(["report", "--from-export", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"Run {run_id}" in text
    assert "Thresholds: Learn-then-Test on the tuning cases, system_risk at most 0.3" in text
    assert main(["report", "--from-export", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["risk_target"]["alpha"] == 0.3


@pytest.mark.parametrize("change, needle", [
    ({"alpha": 2.0}, "alpha: must be a number strictly between 0 and 1"),
    ({"risk": "made_up"}, "risk: must be one of"),
    ({"lambdas": "many"}, "risk_target.lambdas must be a list"),
    ({"extra": 1}, "risk_target has an unknown field 'extra'"),
])
def test_a_target_no_run_would_write_is_refused_with_one_line(ltt_export: tuple[Path, str, Path], tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str],
                                                              change: dict[str, object], needle: str) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(ltt_export[2], copy)
    manifest = json.loads((copy / MANIFEST).read_text(encoding="utf-8"))
    manifest["runs"][0]["spec"]["risk_target"].update(change)
    (copy / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    capsys.readouterr()
    assert main(["report", "--from-export", str(copy)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "runs[0].spec.risk_target" in err and needle in err
