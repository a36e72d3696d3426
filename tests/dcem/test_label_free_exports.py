"""Label-free estimates on every cell of every shipped clinical export (issue 51, item 1):
each cell's round-1 reports without their labels, estimated by the automatic estimator
on the path the Calibration sets page and ``python -m dcem calibrate`` take, then compared
with the labels.  No accepted estimate may swap two agents; the featured run's S1 / seed 0
cell, whose one-coin estimate put the worse agent first, is refused on every path.

A swap: a pair of agents whose order the cell's labels settle (a two-sided sign test at
5 % over the cases on which exactly one of the two is right) and that the accepted
estimate ranks the other way by an amount its own expected counts settle by the same
test (over the cases on which the two disagree, the expected number on which each one's
report is the truth).  A reversal the estimate does not settle (two agents it puts within
a case or two of each other) is counted apart, as are reversals of orders the labels do
not settle either.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from common.errors import InputError
from dcem.calibration import label_free_checks as checks
from dcem.calibration.fitting import ALPHA
from dcem.calibration.label_free_sets import AUTO, UNKNOWN, choose_estimator, usable_estimate
from dcem.calibration.sets import from_matrix
from dcem.cli import main
from dcem.store.database import Store
from dcem.store.demo import DEMO_EXPORTS, FEATURED_RUN, VIEWS_EXPORT
from dcem.store.run_export import load_run_export
from dcem.store.run_import import import_run_export

ROOT = Path(__file__).resolve().parents[2]
CLINICAL = [d for d in DEMO_EXPORTS if d.name.startswith("dcem_clinical")]


@dataclass(frozen=True)
class Cell:
    export: str
    run_id: str
    scenario: str
    seed: int
    labels: tuple[str, ...]
    case_ids: tuple[str, ...]
    truth: np.ndarray  # (N,)
    reports: np.ndarray  # (N, A) round-1 reports of the dcem traces


@dataclass(frozen=True)
class Outcome:
    cell: Cell
    estimator: str
    refused: str  # the refusal's message; empty when accepted
    accuracy: np.ndarray | None  # the estimate's accuracies when accepted
    swaps: int  # pairs settled by the labels and ranked the other way, settled by the estimate
    reversals: int  # pairs settled by the labels and ranked the other way (any amount)
    against_labels: int  # pairs whose labelled accuracies differ, ranked the other way (settled or not)


def _cells(directory: Path) -> list[Cell]:
    export = load_run_export(directory)
    first = export.traces[(export.traces["method"] == "dcem") & (export.traces["round"] == 1)]
    by_case = {(r, c): np.asarray(x, dtype=np.int64) for r, c, x in
               zip(first["run_id"], first["case_id"], first["reports"])}
    out = []
    for row in export.cells.itertuples():
        cases = export.cases[(export.cases["run_id"] == row.run_id) & (export.cases["scenario"] == row.scenario)
                             & (export.cases["seed"] == row.seed)].sort_values("case_id")
        ids = tuple(str(c) for c in cases["case_id"])
        out.append(Cell(directory.name, str(row.run_id), str(row.scenario), int(row.seed),
                        tuple(str(x) for x in row.labels), ids, cases["truth"].to_numpy(dtype=np.int64),
                        np.stack([by_case[(row.run_id, c)] for c in ids])))
    return out


def _settled(wins: tuple[float, float]) -> int | None:
    """0 or 1: which side a sign test at the checks' level settles; None when it does not."""
    counts = (int(round(wins[0])), int(round(wins[1])))
    if checks.sign_test(*counts) >= checks.LEVEL:
        return None
    return 0 if counts[0] > counts[1] else 1


def _outcome(cell: Cell) -> Outcome:
    n, a = cell.reports.shape
    chosen = choose_estimator(AUTO, a, True)
    cset = from_matrix(cell.case_ids, np.full(n, UNKNOWN), cell.reports, cell.labels,
                       f"{cell.export} {cell.run_id} {cell.scenario}/seed {cell.seed}", estimator=chosen)
    try:
        est = usable_estimate(cset, ALPHA)  # what the page and the CLI do with such a set
    except InputError as exc:
        return Outcome(cell, chosen, str(exc), None, 0, 0, 0)
    post, r, y = est.posteriors, cell.reports, cell.truth
    accuracy = checks.estimated_accuracy(r, post)
    labelled = (r == y[:, None]).mean(axis=0)
    swaps = reversals = against = 0
    for i in range(a):
        for j in range(i + 1, a):
            if labelled[i] != labelled[j] and (accuracy[i] - accuracy[j]) * (labelled[i] - labelled[j]) <= 0:
                against += 1
            by_labels = _settled(checks.decisive(r, y, i, j))
            if by_labels is None:
                continue
            better, worse = (i, j) if by_labels == 0 else (j, i)
            reversals += bool(accuracy[worse] >= accuracy[better])
            differ = r[:, i] != r[:, j]
            expected = (float(post[differ, r[differ, i]].sum()), float(post[differ, r[differ, j]].sum()))
            by_estimate = _settled(expected)
            swaps += by_estimate is not None and (i, j)[by_estimate] == worse
    return Outcome(cell, chosen, "", accuracy, swaps, reversals, against)


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    """Every cell of every shipped clinical export, read once and estimated once."""
    return [_outcome(cell) for directory in CLINICAL for cell in _cells(directory)]


def _counts(outcomes: list[Outcome]) -> dict[str, int]:
    accepted = [o for o in outcomes if not o.refused]
    return {"cells": len(outcomes), "two agents": sum(o.cell.reports.shape[1] == 2 for o in outcomes),
            "accepted": len(accepted), "refused": len(outcomes) - len(accepted),
            "swaps": sum(o.swaps > 0 for o in accepted), "reversals": sum(o.reversals > 0 for o in accepted),
            "against": sum(o.against_labels > 0 for o in accepted)}


def test_every_cell_of_every_shipped_clinical_export_is_refused_or_estimated_without_a_swap(
        outcomes: list[Outcome]) -> None:
    assert {d.name for d in CLINICAL} == {"dcem_clinical", "dcem_clinical_mixed", "dcem_clinical_pair",
                                          "dcem_clinical_trio", "dcem_clinical_views"}
    assert {o.cell.export for o in outcomes} == {d.name for d in CLINICAL}
    assert len(outcomes) == sum(len(load_run_export(d).cells) for d in CLINICAL)
    counts = _counts(outcomes)
    print("label-free estimates on the shipped clinical exports:", counts)
    for o in outcomes:
        if o.cell.reports.shape[1] == 2:  # never identified from the reports alone: refused, the number named
            assert o.estimator == "one-coin" and o.refused.startswith("agents: with two agents the reports alone "
                                                                      "cannot tell which one is right")
            assert "at least 6, all for the same agent" in o.refused and "this set has none" in o.refused
        else:
            assert o.estimator == "dawid-skene"
    assert counts["accepted"] > 0  # three members: estimated, so the test judges real estimates
    assert counts["swaps"] == 0, [(o.cell.export, o.cell.scenario, o.cell.seed) for o in outcomes if o.swaps]


def test_what_every_accepted_estimate_passed(outcomes: list[Outcome]) -> None:
    """An accepted estimate of three members keeps every order their agreement settles and
    ranks the weakest member (right on fewer than half of its cases) last."""
    for o in (o for o in outcomes if not o.refused):
        r = o.cell.reports
        assert o.accuracy is not None and o.accuracy.shape == (r.shape[1],)
        for i in range(r.shape[1]):
            for j in range(i + 1, r.shape[1]):
                settled = _settled(checks.agreement_evidence(r, i, j))
                if settled is not None:
                    better, worse = (i, j) if settled == 0 else (j, i)
                    assert o.accuracy[better] > o.accuracy[worse]
        labelled = (r == o.cell.truth[:, None]).mean(axis=0)
        assert np.argmin(o.accuracy) == np.argmin(labelled)


def test_the_docs_state_the_measured_counts(outcomes: list[Outcome]) -> None:
    """docs/label_free.md gives the numbers this test measures."""
    counts = _counts(outcomes)
    text = " ".join((ROOT / "docs" / "label_free.md").read_text(encoding="utf-8").split())
    stated = re.search(r"all (\d+) cells of the five shipped clinical exports \((\d+) of two agents, the rest of "
                       r"three\): (\d+) refused and (\d+) accepted, (\d+) swaps", text)
    assert stated, "docs/label_free.md lost the sentence with the measured counts"
    assert [int(x) for x in stated.groups()] == [counts["cells"], counts["two agents"], counts["refused"],
                                                 counts["accepted"], counts["swaps"]]
    also = re.search(r"(\d+) accepted cells? ranks? two members against an order the labels settle", text)
    assert also and int(also.group(1)) == counts["reversals"]
    unsettled = re.search(r"against the labelled accuracies in (\d+) of the accepted cells", text)
    assert unsettled and int(unsettled.group(1)) == counts["against"]


# -- the reproducer: the featured run's S1 / seed 0 reports without their labels --------

@pytest.fixture(scope="module")
def featured() -> Cell:
    return next(c for c in _cells(VIEWS_EXPORT) if c.run_id == FEATURED_RUN and (c.scenario, c.seed) == ("S1", 0))


def test_the_featured_cell_is_refused_on_the_library_path(featured: Cell) -> None:
    """Before: one-coin put agent 1 first (0.45-0.81 recall) where the labels give agent 2
    (right on 91 % of the cases, agent 1 on 41 %)."""
    labelled = (featured.reports == featured.truth[:, None]).mean(axis=0)
    assert labelled[1] > labelled[0] + 0.4
    from dcem.calibration.dawid_skene import estimate_without_labels

    with pytest.raises(InputError) as info:
        estimate_without_labels(featured.reports, len(featured.labels), method=choose_estimator(AUTO, 2, True))
    assert info.value.field == "agents" and "at least 6, all for the same agent" in str(info.value)


def test_the_featured_cell_with_labels_that_settle_it_is_checked_against_them(featured: Cell) -> None:
    """Labels anchor the estimate: twenty labelled cases on which exactly one agent is right
    settle agent 2 ahead; one-coin's EM (which takes no labels) still puts agent 1 first,
    and the labelled counts refuse it."""
    from dcem.calibration.dawid_skene import estimate_without_labels

    r, y = featured.reports, featured.truth
    decisive = np.flatnonzero((r[:, 0] == y) != (r[:, 1] == y))[:20]
    seeded = np.full(len(y), UNKNOWN)
    seeded[decisive] = y[decisive]
    wins = checks.decisive(r, seeded, 0, 1)
    assert sum(wins) == 20 and wins[1] > wins[0] and checks.sign_test(*wins) < checks.LEVEL
    est = estimate_without_labels(r, len(featured.labels), method="one-coin", truth=seeded)
    accuracy = checks.estimated_accuracy(r, est.posteriors)
    assert accuracy[0] > accuracy[1] and not est.usable
    assert any(p.startswith("the estimate ranks 'agent 1'") and f"'agent 2' is right {wins[1]} times and "
               f"'agent 1' {wins[0]}" in p for p in est.problems)


def test_the_featured_cell_is_refused_by_dcem_calibrate(featured: Cell, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "featured-s1-0.csv"
    agents = [f"agent {a + 1}" for a in range(featured.reports.shape[1])]
    rows = [f"{c},{agents[a]},{featured.labels[featured.reports[i, a]]}"
            for i, c in enumerate(featured.case_ids) for a in range(len(agents))]
    path.write_text("case_id,agent,reported_label\n" + "\n".join(rows) + "\n", encoding="utf-8")
    assert main(["calibrate", str(path)]) == 2
    captured = capsys.readouterr()
    assert not captured.out and len(captured.err.strip().splitlines()) == 1 and "Traceback" not in captured.err
    assert "with two agents the reports alone cannot tell which one is right" in captured.err
    assert "at least 6, all for the same agent" in captured.err


def test_the_featured_cell_is_refused_on_the_pages_path(tmp_path: Path) -> None:
    """The Calibration sets page's "Leave out the true labels" on the demo's featured run."""
    from studio.views.calibration_view import stored_run_calibration_set

    with Store(tmp_path / "demo.duckdb") as store:
        import_run_export(store, VIEWS_EXPORT)
        with pytest.raises(InputError) as info:
            stored_run_calibration_set(store, FEATURED_RUN, "S1", 0, labelled=False)
        assert "at least 6, all for the same agent" in str(info.value)
        labelled = stored_run_calibration_set(store, FEATURED_RUN, "S1", 0)  # with its labels: counted
        assert labelled.estimator == "counts" and labelled.accuracy()[1] > labelled.accuracy()[0]
