"""Files a command reads whole are read at most a stated number of bytes, counted as they
come (issue 51, item 10 and its leftovers): ``/dev/zero`` given to ``dcem explain`` or to
``sag report --from-export`` stops at the limit with one line instead of filling memory."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from common.bounded_read import JSON_FILE_LIMIT, read_at_most
from common.errors import ProjectError

ROOT = Path(__file__).resolve().parents[2]


def test_a_file_within_the_limit_reads_whole_and_one_over_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(b"0123456789")
    assert read_at_most(path, 10) == b"0123456789"
    with pytest.raises(ProjectError, match="is 10 bytes; the limit is 9 bytes"):
        read_at_most(path, 9)
    with pytest.raises(ProjectError, match="cannot read .*missing.json"):
        read_at_most(tmp_path / "missing.json", 9)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_device_that_never_ends_stops_at_the_limit() -> None:
    with pytest.raises(ProjectError, match="has more than 1,000 bytes"):
        read_at_most("/dev/zero", 1000)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
@pytest.mark.parametrize("command", [["dcem", "explain"], ["sag", "report", "--from-export"]])
def test_the_commands_refuse_an_endless_file_with_one_line(command: list[str]) -> None:
    out = subprocess.run([sys.executable, "-m", *command, "/dev/zero"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().count("\n") == 0 and f"has more than {JSON_FILE_LIMIT:,} bytes" in out.stderr
