"""``python -m dcem_clinical export`` and ``python -m dcem_clinical report --from-export``: the export
prints the same tables as the store, and bad input is one line with status 2."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcem_clinical.report.agents import export_agent_rows
from dcem_clinical.report.markdown import AGENTS_TITLE, render_clinical_markdown
from dcem.cli import main as dcem_main
from dcem.store.run_export import load_run_export
from dcem_clinical.cli import main as clinical_main
from dcem_clinical.model_files import model_file_entries
from tests.dcem_clinical.export_runs import COMMAND, clinical_runs

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db, runs = clinical_runs()
    out = tmp_path_factory.mktemp("cli") / "export"
    args = ["export", "--db", str(db), "--out", str(out), "--command", COMMAND]
    for run in runs:
        args += ["--run", run]
    assert clinical_main(args) == 0
    return out


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_export_records_the_runs_command_and_unresolvable_models(export_dir: Path) -> None:
    manifest = load_run_export(export_dir).manifest
    _, runs = clinical_runs()
    assert [r["run_id"] for r in manifest["runs"]] == list(runs) and manifest["command"] == COMMAND
    models = {m["key"]: m for m in manifest["models"]}
    assert list(models) == ["fake-a", "fake-b"]
    for tag, entry in zip("ab", models.values()):
        assert entry["sha256"] is None and entry["file"] is None and entry["run_sha256"] == tag * 64
        assert "unknown model key" in entry["note"]


def test_report_from_export_prints_the_tables_of_the_store(export_dir: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    db, runs = clinical_runs()
    stored = ["report", "--db", str(db)] + [a for r in runs for a in ("--run", r)]
    assert clinical_main(stored) == 0
    from_store = capsys.readouterr().out
    assert clinical_main(["report", "--from-export", str(export_dir)]) == 0
    from_export = capsys.readouterr().out
    assert from_export == from_store and "Table 6" in from_export and "== medqa-tri ==" in from_export
    assert clinical_main(stored + ["--json"]) == 0
    json_store = json.loads(capsys.readouterr().out)
    assert clinical_main(["report", "--from-export", str(export_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json_store


def test_report_from_export_prints_markdown(export_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert clinical_main(["report", "--from-export", str(export_dir), "--markdown"]) == 0
    out = capsys.readouterr().out
    export = load_run_export(export_dir)
    assert out == render_clinical_markdown(export.metrics, export.manifest, agents=export_agent_rows(export))
    assert out.startswith("Commands:") and "| fake-a | — | — | — |" in out
    # one agents table per dataset, one row per panel member with its model key
    assert out.count(AGENTS_TITLE) == 2
    for dataset in ("ddxplus8", "medqa-tri"):
        block = out.split(f"(`{dataset}`)", 1)[1].split("#### ", 1)[0]
        assert "| A | Agent A | fake-a | " in block and "| B | Agent B | fake-b | " in block


@pytest.mark.parametrize("args, needle", [
    (["--run", "llm-nope"], "no run 'llm-nope'"),
    (["--run", "RUN", "--run", "llm-nope"], "no run 'llm-nope'"),
])
def test_export_of_an_unknown_run_exits_2_with_one_line(args: list[str], needle: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    db, runs = clinical_runs()
    args = [runs[0] if a == "RUN" else a for a in args]
    out = tmp_path / "out"
    assert clinical_main(["export", "--db", str(db), "--out", str(out), "--command", "c", *args]) == 2
    assert needle in _one_error_line(capsys)
    assert not (out / "manifest.json").exists()


def test_export_without_required_options_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        clinical_main(["export", "--run", "x", "--out", str(tmp_path)])
    assert exc.value.code == 2 and "--command" in _one_error_line(capsys)


@pytest.mark.parametrize("extra, needle", [
    ([], "no export directory"),
    (["--markdown", "--json"], "one of --markdown, --json or --paired"),
])
def test_report_from_a_bad_export_exits_2_with_one_line(extra: list[str], needle: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert clinical_main(["report", "--from-export", str(tmp_path / "none"), *extra]) == 2
    assert needle in _one_error_line(capsys)


def test_markdown_without_an_export_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert clinical_main(["report", "--db", str(tmp_path / "x.duckdb"), "--markdown"]) == 2
    assert "--from-export" in _one_error_line(capsys)
    assert dcem_main(["report", "--db", str(tmp_path / "x.duckdb"), "--markdown"]) == 2
    assert "--from-export" in _one_error_line(capsys)


def test_each_report_names_the_other_for_an_export_of_the_other_kind(export_dir: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert dcem_main(["report", "--from-export", str(export_dir)]) == 2
    assert f"python -m dcem_clinical report --from-export {export_dir}" in _one_error_line(capsys)
    synthetic = ROOT / "data" / "results" / "dcem_synthetic"
    assert clinical_main(["report", "--from-export", str(synthetic)]) == 2
    line = _one_error_line(capsys)
    assert "holds synthetic runs" in line and "python -m dcem report --from-export" in line


def test_model_entries_note_keys_without_a_local_file(tmp_path: Path) -> None:
    http, local = model_file_entries({"openai:http://127.0.0.1:9/v1#m": None,
                                      f"file:{tmp_path / 'no.gguf'}": "c" * 64})
    assert http["sha256"] is None and "HTTP" in http["note"]
    assert local["sha256"] is None and local["run_sha256"] == "c" * 64 and "no local model file" in local["note"]
