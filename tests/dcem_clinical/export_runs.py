"""Two small clinical runs with scripted models, built once per test process, for the
run-export tests: DDXPlus-8 S1 and S3b over seeds 0 and 1, MedQA-Tri S1 seed 0."""
from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from dcem.core.config import MediatorConfig
from dcem.store.database import Store
from dcem_clinical.run import ClinicalSpec, run_clinical
from tests.dcem_clinical.clinical_fakes import oracle_backend

COMMAND = ("python -m dcem_clinical run --dataset ddxplus8 --scenario S1,S3b --seeds 2 --cases 8 --cal-cases 12\n"
           "python -m dcem_clinical run --dataset medqa-tri --scenario S1 --seeds 1 --cases 8 --cal-cases 12")
ANCHOR = {"ddxplus8": 6, "medqa-tri": 2}


def _spec(dataset: str, scenarios: tuple[str, ...], seeds: tuple[int, ...]) -> ClinicalSpec:
    return ClinicalSpec(dataset=dataset, scenarios=scenarios, seeds=seeds, n_cal=12, n_test=8,
                        agents=("fake-a", "fake-b"), base_config=MediatorConfig(prior="empirical", t_max=3),
                        free_rounds=2)


@lru_cache(maxsize=1)
def clinical_runs() -> tuple[Path, tuple[str, ...]]:
    """(store path, run ids) of the two runs; the store is closed when this returns."""
    where = Path(tempfile.mkdtemp(prefix="dcem-export-runs-"))
    atexit.register(shutil.rmtree, where, ignore_errors=True)
    db = where / "runs.duckdb"
    runs = []
    with Store(db) as store:
        for spec in (_spec("ddxplus8", ("S1", "S3b"), (0, 1)), _spec("medqa-tri", ("S1",), (0,))):
            backends = [oracle_backend(spec.dataset, tag="a"),
                        oracle_backend(spec.dataset, anchor=ANCHOR[spec.dataset], tag="b")]
            runs.append(run_clinical(store, spec, backends=backends).run_id)
    return db, tuple(runs)
