"""A clinical run resumes only with the settings it was stored with (issue 51, item 2).

``python -m dcem_clinical run`` takes no run id: its id hashes the spec, so the same command
finds the same run.  A store can still hold that id with other settings (a synthetic run
named with it by ``--run-id``, or a store merged from elsewhere): the command then exits 2
with one line naming the first field that differs, and writes nothing."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from dcem.store.database import Store
from tests.cli_inprocess import run_main
from tests.store_rows import store_rows

RUN = ["run", "--dataset", "ddxplus8", "--agents", "stat,stat:lr-evidence", "--cal-cases", "24", "--cases", "10",
       "--t-max", "2", "--free-rounds", "1", "--quiet"]


@pytest.fixture(scope="module")
def clinical_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store with one finished clinical run of two statistical agents (no model loads), and its id."""
    db = tmp_path_factory.mktemp("clinical") / "c.duckdb"
    out = run_main("dcem_clinical", [*RUN, "--db", str(db)])
    assert out.returncode == 0, out.stderr
    found = re.search(r"run (llm-[0-9a-f]{12}) \(new\): 1 cells computed", out.stdout)
    assert found, out.stdout
    return db, found.group(1)


def _copy(clinical_run: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    db = tmp_path / "c.duckdb"
    shutil.copy(clinical_run[0], db)
    return db, clinical_run[1]


def _refused(package: str, args: list[str], db: Path) -> str:
    before = store_rows(db)
    out = run_main(package, [*args, "--db", str(db)])
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    assert store_rows(db) == before  # no row added, removed or changed
    return out.stderr


def test_the_clinical_command_refuses_its_id_stored_with_another_temperature(clinical_run: tuple[Path, str],
                                                                              tmp_path: Path) -> None:
    db, run_id = _copy(clinical_run, tmp_path)
    with Store(db) as store:  # the id held with other settings, as a store merged from elsewhere could
        spec = json.loads(store.con.execute("SELECT spec_json FROM runs WHERE run_id = ?", [run_id]).fetchone()[0])
        store.con.execute("UPDATE runs SET spec_json = ? WHERE run_id = ?",
                          [json.dumps({**spec, "temperature": 0.7}, sort_keys=True), run_id])
    err = _refused("dcem_clinical", RUN, db)
    assert err.startswith(f"error: run {run_id} is stored with other settings: temperature stored 0.7, given 0.0;")


def test_a_synthetic_run_cannot_take_the_clinical_runs_id(clinical_run: tuple[Path, str], tmp_path: Path) -> None:
    db, run_id = _copy(clinical_run, tmp_path)
    err = _refused("dcem", ["run", "synthetic", "--run-id", run_id, "--scenarios", "S1", "--seeds", "1",
                            "--n-train", "200", "--n-eval", "10", "--quiet"], db)
    assert f'run {run_id} is stored with other settings: kind stored "clinical", given "synthetic"' in err


def test_the_clinical_command_refuses_a_synthetic_run_named_with_its_id(clinical_run: tuple[Path, str],
                                                                         tmp_path: Path) -> None:
    db, run_id = tmp_path / "s.duckdb", clinical_run[1]
    named = run_main("dcem", ["run", "synthetic", "--run-id", run_id, "--scenarios", "S1", "--seeds", "1",
                              "--n-train", "200", "--n-eval", "10", "--no-ablation", "--quiet", "--db", str(db)])
    assert named.returncode == 0, named.stderr
    err = _refused("dcem_clinical", RUN, db)  # before: clinical cells computed into the synthetic run
    assert f'run {run_id} is stored with other settings: kind stored "synthetic", given "clinical"' in err


def test_the_train_command_refuses_its_run_id_stored_with_another_learning_rate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The training id hashes the settings (not threads, device or steps): a store holding it
    with another learning rate, as a merged store could, is refused before the model loads."""
    from dataclasses import replace

    from dcem_clinical.cli import _parser
    from dcem_clinical.diagnostician import data_hash
    from dcem_clinical.train_run import KIND, training_cases
    from runtime.llama_backend import file_sha256
    from runtime.registry import resolve
    from training.cli import settings_from
    from training.store import TrainingStore

    db, out = tmp_path / "t.duckdb", tmp_path / "runs"
    args = ["train", "--db", str(db), "--out", str(out), "--steps", "1", "--heldout", "0", "--quiet"]
    settings, train = settings_from(_parser().parse_args(args)), training_cases("ddxplus8", 0)[0]
    run_id = settings.digest(KIND, "smollm2-135m", file_sha256(resolve("smollm2-135m")), data_hash(train))
    with TrainingStore(db) as store:
        store.start_run(run_id, kind=KIND, method="grpo", base_model="smollm2-135m", data_name="ddxplus8:train",
                        settings=replace(settings, learning_rate=1e-3).recorded(), data_hash=data_hash(train),
                        n_train=len(train))
    before = store_rows(db)

    def no_load(*_: object, **__: object) -> None:
        raise AssertionError("the base model was loaded before the refusal")

    monkeypatch.setattr("training.base_model.load_base", no_load)
    done = run_main("dcem_clinical", args)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"error: training run {run_id} is stored with other settings: "
                                  "settings.learning_rate stored 0.001, given 0.0002; nothing was written")
    assert store_rows(db) == before and not (out / run_id).exists()
