"""Issue 51: ``python -m sag run`` and ``sag eval`` check their groups' model keys before the
first write: an unknown key, adapter or ``openai:`` key exits 2 with one line, leaves the
store as it was (no run, failure or evaluation part) and starts no Ray, whether the items
would run here or on Ray workers (which alone would load the models)."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

import common.ray_work
from sag.store.tables import SagStore
from tests.cli_inprocess import run_main
from tests.store_rows import store_rows

COMMANDS = {
    "run": ["run", "-q", "--group", "single", "--benchmark", "medqa", "--items", "2"],
    "eval": ["eval", "-q", "--suite", "accuracy", "--groups", "single,vote-6", "--items", "2", "--in-process"],
}


@pytest.fixture()
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    """Joining Ray fails the test: a refusal must come first."""
    def connect(self: Any) -> None:
        raise AssertionError("Ray was started before the model keys were checked")

    monkeypatch.setattr(common.ray_work.RayExecutor, "connect", connect)


def _refused(out: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ") \
        and "Traceback" not in out.stderr, (out.returncode, out.stderr)
    return lines[0]


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("executor", ["process", "ray"])
@pytest.mark.parametrize("model, says", [
    ("bogus-model", "unknown model key 'bogus-model'"),
    ("smollm2-135m+lora:nope", "unknown adapter 'nope'"),
    ("openai:notaurl#m", "'notaurl' must start with http:// or https://"),
])
def test_a_bad_model_key_is_refused_before_anything_is_stored(tmp_path: Path, command: str, executor: str,
                                                              model: str, says: str, no_ray: None) -> None:
    db = tmp_path / "sag.duckdb"
    SagStore(db).close()
    before = store_rows(db)
    line = _refused(run_main("sag", [*COMMANDS[command], "--model", model, "--executor", executor, "--db", str(db)]))
    assert says in line, line
    assert store_rows(db) == before
