"""Issue 51: the Ray flags of every run command (``dcem run synthetic``, ``dcem_clinical
run``, ``sag run``, ``sag eval``) are refused with one line and status 2, writing nothing:
``--workers``, ``--worker-threads`` and ``--worker-gpus`` without ``--executor ray``, an
address that is not ``HOST:PORT`` or has a port beyond 65,535 (at parse time), and an
address nobody answers on (a closed local port: one bounded TCP connection, before the
store is opened)."""
from __future__ import annotations

import argparse
import socket
import subprocess
from pathlib import Path

import pytest

from common.cli_args import host_port
from common.cli_kit import check_executor_args
from common.errors import ConfigError
from common.ray_work import RayExecutor
from dcem.core.config import MediatorConfig
from dcem.store.database import Store
from sag.store.tables import SagStore
from tests.cli_inprocess import run_main
from tests.store_rows import store_rows

RUNS = {
    "dcem run synthetic": ("dcem", ["run", "synthetic", "--quiet", "--scenarios", "S1", "--n-eval", "20"]),
    "dcem_clinical run": ("dcem_clinical", ["run", "--quiet", "--agents", "stat,stat"]),
    "sag run": ("sag", ["run", "-q", "--group", "single", "--benchmark", "medqa", "--items", "2"]),
    "sag eval": ("sag", ["eval", "-q", "--suite", "accuracy", "--groups", "single", "--items", "2", "--in-process"]),
}


def _store(tmp_path: Path, cli: str) -> Path:
    """A store holding what the command writes into (a D-CEM store with one run, or a SAG store)."""
    path = tmp_path / "store.duckdb"
    if cli == "sag":
        SagStore(path).close()
    else:
        with Store(path) as store:
            store.ensure_run("earlier", kind="synthetic", spec={"n": 1}, config=MediatorConfig(), seeds=[0])
    return path


def _refused(out: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 2 and len(lines) == 1 and "error: " in lines[0] and "Traceback" not in out.stderr, \
        (out.returncode, out.stderr)
    return lines[0]


def _closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("command", sorted(RUNS))
@pytest.mark.parametrize("flag, value", [("--workers", "3"), ("--worker-threads", "2"), ("--worker-gpus", "1")])
def test_worker_flags_without_ray_are_refused_and_write_nothing(tmp_path: Path, command: str, flag: str,
                                                                value: str) -> None:
    cli, argv = RUNS[command]
    db = _store(tmp_path, cli)
    before = store_rows(db)
    line = _refused(run_main(cli, [*argv, flag, value, "--db", str(db)]))
    assert f"{flag} sets up Ray workers and needs --executor ray" in line
    assert store_rows(db) == before


@pytest.mark.parametrize("address, says", [
    ("bogus", "must be HOST:PORT"),
    ("127.0.0.1:99999", "the port must be a whole number from 1 to 65,535, got 99999"),
    ("127.0.0.1:0", "from 1 to 65,535, got 0"),
    (":6379", "must be HOST:PORT"),
    ("head:", "must be HOST:PORT"),
    ("head:port", "must be HOST:PORT"),
    ("ray://head:6379", "must be HOST:PORT"),
    ("two words:6379", "must be HOST:PORT"),
    ("head:６３７９", "must be HOST:PORT"),
])
def test_a_ray_address_that_is_not_host_port_is_refused_while_parsing(tmp_path: Path, address: str,
                                                                      says: str) -> None:
    for command in sorted(RUNS):
        cli, argv = RUNS[command]
        db = tmp_path / f"{cli}.duckdb"
        line = _refused(run_main(cli, [*argv, "--executor", "ray", "--ray-address", address, "--db", str(db)]))
        assert "argument --ray-address: " in line and says in line, line
        assert not db.exists()


def test_host_port_takes_names_addresses_and_bracketed_ipv6() -> None:
    for text in ("head:6379", "10.0.0.5:6379", " node-1.cluster.local:1 ", "[::1]:65535"):
        assert host_port(text) == text.strip()
    with pytest.raises(ConfigError) as info:
        RayExecutor(address="bogus")
    assert info.value.field == "ray_address"


@pytest.mark.parametrize("command", sorted(RUNS))
def test_an_address_nobody_answers_on_is_one_line_and_writes_nothing(tmp_path: Path, command: str) -> None:
    cli, argv = RUNS[command]
    db = _store(tmp_path, cli)
    before = store_rows(db)
    address = f"127.0.0.1:{_closed_port()}"
    line = _refused(run_main(cli, [*argv, "--executor", "ray", "--ray-address", address, "--db", str(db)]))
    assert f"ray_address: nothing answers at {address}" in line and "ray start --head" in line
    assert store_rows(db) == before


def test_the_executor_refuses_a_closed_port_when_it_connects() -> None:
    executor = RayExecutor(address=f"127.0.0.1:{_closed_port()}")
    with pytest.raises(ConfigError) as info:
        executor.connect()
    assert info.value.field == "ray_address" and "nothing answers" in str(info.value)
    executor.close()
    assert not executor.started


def test_worker_flags_take_their_defaults_with_ray_only() -> None:
    args = argparse.Namespace(executor="ray", ray_address=None, workers=None, worker_threads=4, worker_gpus=None)
    check_executor_args(args)
    assert (args.workers, args.worker_threads, args.worker_gpus) == (2, 4, 0.0)
    args = argparse.Namespace(executor="process", ray_address=None, workers=None, worker_threads=None,
                              worker_gpus=None)
    check_executor_args(args)
    assert (args.workers, args.worker_threads, args.worker_gpus) == (None, None, None)
    with pytest.raises(ConfigError) as info:
        check_executor_args(argparse.Namespace(executor="process", ray_address=None, workers=None,
                                                worker_threads=None, worker_gpus=0.5))
    assert info.value.field == "worker_gpus"
