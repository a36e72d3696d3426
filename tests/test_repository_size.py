"""No tracked file over 10 MB: git keeps every version of every file, so a store or a
packed store committed as results would grow every clone for good.  Results ship as
compact exports (a manifest beside Parquet tables)."""
from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 10 * 1000 * 1000


def _tracked() -> list[Path]:
    """The files git tracks (the project is a clone: CI runs on one)."""
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / name for name in out.decode().split("\0") if name]


def test_no_tracked_file_exceeds_10_mb() -> None:
    files = [p for p in _tracked() if p.is_file()]
    assert len(files) > 100  # the listing worked
    big = {str(p.relative_to(ROOT)): p.stat().st_size for p in files if p.stat().st_size > LIMIT}
    assert not big, f"tracked files over 10 MB (ship an export instead): {big}"


def test_no_store_is_tracked() -> None:
    stores = [str(p.relative_to(ROOT)) for p in _tracked()
              if p.name.endswith((".duckdb", ".duckdb.gz", ".duckdb.wal")) and not p.parts[-3:-1] == ("tests", "fixtures")]
    assert not stores, f"stores are tracked as results (ship an export instead): {stores}"
