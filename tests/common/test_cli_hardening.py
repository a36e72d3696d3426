"""The three command lines refuse bad flag values before loading a model, report commands
create no store and fail on an unknown run or an empty selection, and a run checks its
items before it creates its store."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.common.cli_flag_cases import install_stand_ins, run_main, write_items

HUGE = "100000000000000000000"


def _one_error(code: int, err: str) -> str:
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1 and "error: " in lines[0] and "Traceback" not in err, (code, err)
    return lines[0]


@pytest.mark.parametrize("cli, argv", [
    ("sag", ["run", "-q", "--group", "single"]),
    ("dcem_clinical", ["run", "--quiet"]),
])
@pytest.mark.parametrize("flag, value, says", [
    ("--threads", HUGE, "--threads: must be a whole number from 1 to 1,024"),
    ("--threads", "-" + HUGE, "--threads: must be a whole number from 1 to 1,024"),
    ("--threads", "0", "--threads"),
    ("--n-gpu-layers", HUGE, "--n-gpu-layers: must be a whole number from -1 to 1,024"),
    ("--n-gpu-layers", "-" + HUGE, "--n-gpu-layers"),
    ("--n-gpu-layers", "-2", "--n-gpu-layers"),
    ("--threads", "nan", "--threads"),
    ("--n-gpu-layers", "", "--n-gpu-layers"),
])
def test_bad_load_settings_are_refused_before_any_model(cli: str, argv: list[str], flag: str, value: str, says: str,
                                                        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record: dict[str, Any] = {}
    install_stand_ins(monkeypatch, record)
    extra = ["--benchmark", str(write_items(tmp_path))] if cli == "sag" else []
    code, _, err = run_main(cli, [*argv, *extra, f"{flag}={value}"])
    assert says in _one_error(code, err) and not record


@pytest.mark.parametrize("argv", [
    ["--temperature=nan"], ["--temperature=inf"], ["--n-ctx=100000000000000000000"], ["--seeds=100000000000000000000"],
    ["--few-shot=17"], ["--t-max=0"], ["--cases=-1"],
])
def test_clinical_run_refuses_values_out_of_range(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    record: dict[str, Any] = {}
    install_stand_ins(monkeypatch, record)
    _one_error(*run_main("dcem_clinical", ["run", "--quiet", *argv])[::2])
    assert not record


@pytest.mark.parametrize("argv", [
    ["run", "synthetic", "--seeds=100000000000000000000"], ["run", "synthetic", "--xi=nan"],
    ["run", "synthetic", "--n-train=100000000000000000000"], ["run", "synthetic", "--kappa=inf"],
    ["ceilings", "--n=100000000000000000000"], ["ceilings", "--seed=-1"],
])
def test_synthetic_commands_refuse_values_out_of_range(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    record: dict[str, Any] = {}
    install_stand_ins(monkeypatch, record)
    _one_error(*run_main("dcem", argv)[::2])
    assert not record


def test_the_library_refuses_bad_load_settings_before_resolving_a_model() -> None:
    from common.errors import ConfigError
    from runtime.factory import make_backend

    for kwargs, field in (({"n_threads": 10 ** 20}, "threads"), ({"n_threads": 0}, "threads"),
                          ({"n_gpu_layers": -(10 ** 20)}, "n_gpu_layers"), ({"n_ctx": 10 ** 20}, "n_ctx")):
        with pytest.raises(ConfigError) as info:
            make_backend("hf:no/such:file.gguf", **kwargs)
        assert info.value.field == field


@pytest.mark.parametrize("cli, argv", [
    ("sag", ["report"]), ("sag", ["report", "--eval"]), ("dcem", ["report"]), ("dcem", ["runs"]),
    ("dcem_clinical", ["cache"]), ("dcem_clinical", ["cache", "--clear-invalid"]),
])
def test_a_read_only_command_creates_no_store(cli: str, argv: list[str], tmp_path: Path) -> None:
    db = tmp_path / "missing" / "store.duckdb"
    line = _one_error(*run_main(cli, [*argv, "--db", str(db)])[::2])
    assert "no store file" in line and not db.parent.exists()


def test_sag_run_checks_its_items_before_creating_the_store(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "a", "question": "Q?", "options": {"A": "x"}, "answer": "A"}) + "\n")
    db = tmp_path / "new" / "s.duckdb"
    line = _one_error(*run_main("sag", ["run", "--benchmark", str(bad), "--group", "single", "-q", "--db", str(db)])
                      [::2])
    assert "options" in line and not db.parent.exists()
    few = write_items(tmp_path)
    line = _one_error(*run_main("sag", ["run", "--benchmark", str(few), "--items", "30", "-q", "--db", str(db)])[::2])
    assert "items" in line and not db.parent.exists()


def test_sag_report_of_an_unknown_run_or_an_empty_store_is_an_error(tmp_path: Path) -> None:
    from sag.store.tables import SagStore

    db = tmp_path / "s.duckdb"
    SagStore(db).close()
    line = _one_error(*run_main("sag", ["report", "--run", "no-such-run", "--db", str(db)])[::2])
    assert "no-such-run" in line
    line = _one_error(*run_main("sag", ["report", "--db", str(db)])[::2])
    assert "python -m sag run" in line


def test_clinical_export_of_an_unknown_run_is_an_error(tmp_path: Path) -> None:
    from dcem.store.database import Store

    db, out = tmp_path / "d.duckdb", tmp_path / "export"
    Store(db).close()
    line = _one_error(*run_main("dcem_clinical", ["export", "--run", "nope", "--out", str(out), "--command", "x",
                                                  "--db", str(db)])[::2])
    assert "'nope'" in line and not out.exists()


def test_a_usage_error_quoting_a_line_break_stays_on_one_line() -> None:
    _one_error(*run_main("sag", ["report", "extra\nargument"])[::2])
