"""Calibration sets built from this project's own runs: the rows a synthetic run estimated
its confusions from, a stored run's round-1 reports (ex post), and the small example file.
They read the synthetic world and the store, so they sit above both; the set itself and
its CSV reading are :mod:`dcem.calibration.sets`."""
from __future__ import annotations

import numpy as np

from common.errors import InputError
from common.fields import Whole, check
from dcem.calibration.fitting import ALPHA
from dcem.calibration.label_free_sets import AUTO, UNKNOWN, choose_estimator, usable_estimate
from dcem.calibration.sets import CalibrationSet, from_matrix
from dcem.store.database import Store
from dcem.synthetic.experiment import N_TUNE, seed_streams
from dcem.synthetic.generator import LABELS, generate
from dcem.synthetic.rule_agents import RuleAgents
from dcem.synthetic.rule_agents import scenario as build_scenario

__all__ = ["synthetic_calibration_set", "stored_run_calibration_set", "example_csv", "EXAMPLE_SCENARIO",
           "EXAMPLE_SEED", "EXAMPLE_CASES"]

EXAMPLE_SCENARIO = "S2"
EXAMPLE_SEED = 20240
EXAMPLE_CASES = 30


def synthetic_calibration_set(scenario: str, seed: int, n: int = 2000) -> CalibrationSet:
    """The calibration rows a synthetic run with ``n_train = n`` estimated its confusions from.

    Reproduces :func:`dcem.synthetic.experiment.run_cell` exactly: the same seed streams
    generate ``n`` training samples, the last ``min(1000, n // 5)`` are the tuning part
    and the rest (the estimation part) get the unsteered agents' round-1 reports.  So
    ``confusion()`` and ``prior("empirical")`` equal the panel of
    ``run_cell(scenario, seed, n_train=n)`` (whose default ``n_train`` is 20000).
    Labels ``k0, k1, k2``; agents ``agent 1, agent 2``; case ids
    ``"<scenario>-s<seed>-cal-<i>"``.
    """
    scen = build_scenario(scenario)
    check("seed", seed, Whole(0, numpy=True, msg="must be a non-negative integer, got {value!r}"), error=InputError)
    check("n", n, Whole(10, numpy=True, msg="must be an integer >= 10, got {value!r}"), error=InputError)
    streams = seed_streams(int(seed))
    train = generate(int(n), np.random.default_rng(streams["data"]))
    n_est = int(n) - min(N_TUNE, int(n) // 5)
    est = train.subset(slice(0, n_est))
    reports = RuleAgents(scen, est.features, np.random.default_rng(streams["calibration"])).report(1)
    case_ids = [f"{scenario}-s{seed}-cal-{i:05d}" for i in range(n_est)]
    source = (f"synthetic {scenario}, seed {seed}: round-1 reports on the {n_est} "
              f"confusion-estimation cases of a run with n_train={n}")
    return from_matrix(case_ids, est.labels, reports, LABELS, source)


def stored_run_calibration_set(store: Store, run_id: str, scenario: str, seed: int, *,
                               labelled: bool = True, estimator: str = AUTO) -> CalibrationSet:
    """Ex-post set from a stored run: round-1 reports of the ``dcem`` traces vs the truth.

    These are the agents' first answers on the run's EVALUATION cases (round 1 comes
    before any steer), not the held-out calibration data the run estimated its panel
    from; confusions estimated here describe how the agents did on the evaluated cases.
    With ``labelled=False`` the truth is left out: the confusions are estimated from the
    reports alone (``estimator``, :func:`~dcem.calibration.label_free_sets.choose_estimator`),
    and reviewed cases can give labels later (:func:`~dcem.calibration.label_free_sets.
    with_labels`); an estimate with problems is refused with them named.
    Raises :class:`dcem.store.database.StoreError` when the cell is missing and
    :class:`InputError` when it has no ``dcem`` traces.
    """
    cell = store.load_cell(run_id, scenario, int(seed))
    if "dcem" not in cell.reports:
        raise InputError("run_id", f"run {run_id!r} cell {scenario}/seed {seed} has no 'dcem' traces")
    first = cell.reports["dcem"][:, 0, :]
    what = "vs their true labels" if labelled else "without their labels"
    source = (f"run {run_id} {scenario}/seed {seed}: round-1 dcem reports on the "
              f"{len(cell.case_ids)} evaluation cases, {what} (ex post, not the run's calibration data)")
    if labelled:
        return from_matrix(cell.case_ids, cell.truth, first, tuple(cell.panel.labels), source)
    chosen = choose_estimator(estimator, first.shape[1], True)
    unknown = np.full(len(cell.case_ids), UNKNOWN, dtype=np.int64)
    cset = from_matrix(cell.case_ids, unknown, first, tuple(cell.panel.labels), source, estimator=chosen)
    usable_estimate(cset, ALPHA)
    return cset


def example_csv() -> str:
    """A small valid example file: 30 synthetic cases, 2 agents, labels k0, k1, k2.

    Deterministic (scenario :data:`EXAMPLE_SCENARIO`, seed :data:`EXAMPLE_SEED`);
    ``data/examples/calibration_example.csv`` holds the same text.  Regenerate it with
    ``python -c "from dcem.analysis.calibration_sources import example_csv; import sys;
    sys.stdout.write(example_csv())" > data/examples/calibration_example.csv``.
    """
    data_seq, report_seq = np.random.SeedSequence(EXAMPLE_SEED).spawn(2)
    data = generate(EXAMPLE_CASES, np.random.default_rng(data_seq))
    reports = RuleAgents(build_scenario(EXAMPLE_SCENARIO), data.features,
                         np.random.default_rng(report_seq)).report(1)
    case_ids = [f"case-{i + 1:02d}" for i in range(EXAMPLE_CASES)]
    cset = from_matrix(case_ids, data.labels, reports, LABELS, "example")
    return cset.to_csv()
