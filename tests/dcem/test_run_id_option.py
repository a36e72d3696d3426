"""``python -m dcem run synthetic --run-id``: a name with a line break, a space, a slash or
nothing in it is refused while the command line is read (exit 2, one line, no store)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_inprocess import run_main


@pytest.mark.parametrize("name", ["a\nb", "my run", "../x", "", "-x", "x" * 129, "é"])
def test_a_run_id_that_is_not_a_plain_name_is_refused(tmp_path: Path, name: str) -> None:
    db = tmp_path / "store.duckdb"
    out = run_main("dcem", ["run", "synthetic", f"--run-id={name}", "--quiet", "--db", str(db)])
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert "argument --run-id: must be 1 to 128 letters, digits" in lines[0] and not db.exists()


def test_a_plain_run_id_names_the_run(tmp_path: Path) -> None:
    out = run_main("dcem", ["run", "synthetic", "--run-id", "my-run_1.0", "--scenarios", "S1", "--seeds", "1",
                            "--n-train", "200", "--n-eval", "10", "--no-ablation", "--quiet",
                            "--db", str(tmp_path / "s.duckdb")])
    assert out.returncode == 0 and out.stdout.startswith("run my-run_1.0 (new)"), out.stderr
