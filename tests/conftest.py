"""Small real runs stored once for the dashboard tests: a synthetic run, and a clinical
LLM run answered by scripted fake models (no real model is loaded)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dcem.core.config import MediatorConfig
from dcem.store.database import Store
from dcem.synthetic.experiment import run_cell
from tests.spawn_support import bare_spawn


@pytest.fixture(scope="session", autouse=True)
def _index_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Retrieval indexes of the test run go to a temporary folder, not the user's cache."""
    import os

    os.environ["DCEM_INDEX_CACHE"] = str(tmp_path_factory.mktemp("index_cache"))


@pytest.fixture(scope="session", autouse=True)
def _ctrl_c_as_in_a_terminal() -> None:
    """Ctrl-C raises KeyboardInterrupt in the test processes, as in a terminal: a test run
    started in the background by a non-interactive shell inherits SIGINT ignored, and the
    tests of what Ctrl-C does would then see nothing happen."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session", autouse=True)
def _one_thread_per_model() -> None:
    """Models without an explicit thread count take one thread (``$DCEM_THREADS``, inherited by
    the commands the tests start): the test processes share the cores, and two llama.cpp
    models of two threads each on two cores spin against each other (beside two busy one-thread
    jobs, tests/runtime/test_llama_batch.py took 174 s with two threads, 60 s with one)."""
    import os

    os.environ.setdefault("DCEM_THREADS", "1")


@pytest.fixture(scope="session", autouse=True)
def _torch_base_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Dequantized training bases (training.base_cache) go to one temporary folder that the
    test processes share (the first to load a base writes it, the others read it), whatever a
    test sets ``DCEM_MODEL_CACHE`` to; a ``DCEM_TORCH_CACHE`` set before the run is kept."""
    import os

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    os.environ.setdefault("DCEM_TORCH_CACHE", str(shared / "torch-bases"))


@pytest.fixture(scope="session")
def run_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("app") / "runs.duckdb"
    with Store(path) as store:
        cells = [run_cell(s, 0, n_train=2000, n_eval=24, ablation=False) for s in ("S1", "S3b")]
        store.ensure_run("ui-run", kind="synthetic", spec={"test": True}, config=cells[0].config, seeds=[0])
        for cell in cells:
            store.save_cell("ui-run", cell)
        store.ledger().finish("ui-run")
    return path


@pytest.fixture(scope="session")
def clinical_db(run_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic ``ui-run`` plus a newer clinical run (DDXPlus-8, S2, 16 CAL and 12 TEST
    cases, t_max 4, Free discussion 3 rounds) of two scripted models: an informed one and
    one anchored on GERD by its role (see tests/dcem_clinical/clinical_fakes.py).  Its run id is
    ``Store(path).latest_run("clinical")``; copy the file before writing to it."""
    from dcem_clinical.run import ClinicalSpec, run_clinical
    from tests.dcem_clinical.clinical_fakes import oracle_backend

    path = tmp_path_factory.mktemp("clinical") / "clinical.duckdb"
    shutil.copy(run_db, path)
    spec = ClinicalSpec(dataset="ddxplus8", scenarios=("S2",), seeds=(0,), n_cal=16, n_test=12,
                        agents=("fake-a", "fake-b"), base_config=MediatorConfig(prior="empirical", t_max=4),
                        free_rounds=3)
    backends = [oracle_backend("ddxplus8", tag="a"), oracle_backend("ddxplus8", anchor=6, tag="b")]
    with Store(path) as store:
        summary = run_clinical(store, spec, backends=backends)
    assert summary.complete
    return path


@pytest.fixture()
def spawn(monkeypatch: pytest.MonkeyPatch) -> object:
    """A multiprocessing spawn context for the multi-process tests (:func:`bare_spawn`)."""
    return bare_spawn(monkeypatch)


_LOADED_BASES: dict[tuple[str, str], object] = {}


@pytest.fixture()
def reuse_loaded_bases(monkeypatch: pytest.MonkeyPatch) -> None:
    """``training.base_model.load_base`` dequantizes a GGUF base once per test process and
    hands out copies (a load takes about 3 s from training.base_cache's copy, 20 s or more the
    first time): the tests that load the same base several times request this fixture."""
    import copy

    import training.base_model as base_model

    real = base_model.load_base

    def load_once(gguf_path: Path, device: str = "cpu") -> object:
        key = (str(Path(gguf_path).resolve()), device)
        if key not in _LOADED_BASES:
            _LOADED_BASES[key] = real(gguf_path, device)
        return copy.deepcopy(_LOADED_BASES[key])

    monkeypatch.setattr(base_model, "load_base", load_once)
