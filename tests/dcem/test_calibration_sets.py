"""Calibration sets: CSV parsing and its errors, tables, smoothing, built-in sources."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dcem.calibration.fitting import estimate_confusion, estimate_prior
from dcem.analysis.calibration_sources import example_csv, stored_run_calibration_set, synthetic_calibration_set
from dcem.calibration.sets import CalibrationSet, parse_calibration_csv
from dcem.core.panel import Panel
from common.errors import InputError
from dcem.store.database import Store, StoreError
from dcem.synthetic.experiment import run_cell
from dcem.synthetic.generator import synthetic_loss

ROOT = Path(__file__).resolve().parents[2]

# 4 cases x 2 agents; truth c1=a, c2=b, c3=b, c4=c
HAND = """case_id,agent,reported_label,true_label
c1,A,a,a
c1,B,b,a
c2,A,b,b
c2,B,b,b
c3,A,a,b
c3,B,b,b
c4,A,c,c
c4,B,c,c
"""


def hand_set() -> CalibrationSet:
    cset, warnings = parse_calibration_csv(HAND)
    assert warnings == []
    return cset


def error(data: bytes | str, **kwargs: object) -> str:
    with pytest.raises(InputError) as info:
        parse_calibration_csv(data, **kwargs)  # type: ignore[arg-type]
    return str(info.value)


# ------------------------------------------------------------------ tables
def test_counts_on_hand_made_csv() -> None:
    cset = hand_set()
    assert cset.labels == ("a", "b", "c")
    assert cset.agents == ("A", "B")
    assert (cset.n_rows, cset.n_cases) == (8, 4)
    expected = np.zeros((2, 3, 3), dtype=int)
    expected[0] = [[1, 0, 0], [1, 1, 0], [0, 0, 1]]
    expected[1] = [[0, 1, 0], [0, 2, 0], [0, 0, 1]]
    np.testing.assert_array_equal(cset.counts(), expected)
    np.testing.assert_array_equal(cset.class_counts(), [1, 2, 1])
    np.testing.assert_allclose(cset.accuracy(), [0.75, 0.75])


def test_confusion_equals_estimate_confusion() -> None:
    cset = hand_set()
    truth = np.array([0, 1, 1, 2])
    reports = np.array([[0, 1], [1, 1], [0, 1], [2, 2]])
    for alpha in (0.5, 2.0):
        np.testing.assert_allclose(cset.confusion(alpha), estimate_confusion(truth, reports, 3, alpha=alpha))
    conf = cset.confusion()
    # agent A, truth b: counts (1, 1, 0), n = 2 -> (1.5, 2.0, 0.5) / 4
    np.testing.assert_allclose(conf[0, 1], [1.5 / 4, 2.0 / 4, 0.5 / 4])


def test_recall_and_nan_for_missing_class() -> None:
    cset = hand_set()
    np.testing.assert_allclose(cset.recall(), [[1.0, 0.5, 1.0], [0.0, 1.0, 1.0]])
    text = HAND.replace("c4,A,c,c\n", "")  # agent A has no row of class c
    cset2, warnings = parse_calibration_csv(text)
    rec = cset2.recall()
    assert np.isnan(rec[0, 2]) and rec[1, 2] == 1.0
    assert any("agent 'A' has no row for 1 of 4 cases ('c4')" in w for w in warnings)


def test_prior_and_panel() -> None:
    cset = hand_set()
    np.testing.assert_allclose(cset.prior("empirical"), estimate_prior(np.array([0, 1, 1, 2]), 3, "empirical"))
    np.testing.assert_allclose(cset.prior("empirical"), [1.5 / 5.5, 2.5 / 5.5, 1.5 / 5.5])
    np.testing.assert_allclose(cset.prior(), [1 / 3] * 3)
    panel = cset.to_panel(np.ones((3, 3)) - np.eye(3), prior_mode="empirical")
    assert isinstance(panel, Panel) and panel.labels == ("a", "b", "c")
    np.testing.assert_allclose(panel.confusion, cset.confusion())
    np.testing.assert_allclose(panel.prior, cset.prior("empirical"))


def test_explicit_label_order_and_tolerant_header() -> None:
    text = " Case ID , AGENT,Reported-Label,true_label ,notes\n" + "\n".join(
        line + ",x" for line in HAND.splitlines()[1:]) + "\n\n,,,,\n"
    cset, warnings = parse_calibration_csv(text.encode("utf-8-sig"), labels=["c", "b", "a"])
    assert cset.labels == ("c", "b", "a")
    np.testing.assert_array_equal(cset.class_counts(), [1, 2, 1])
    assert any("ignored extra column: notes" in w for w in warnings)
    assert any("skipped 1 row" in w for w in warnings)


def test_round_trip_frame_csv_parse() -> None:
    cset = hand_set()
    frame = cset.to_frame()
    assert list(frame.columns) == ["case_id", "agent", "reported_label", "true_label"]
    back, warnings = parse_calibration_csv(frame.to_csv(index=False), labels=cset.labels)
    assert warnings == []
    assert (back.labels, back.agents, back.case_ids) == (cset.labels, cset.agents, cset.case_ids)
    for field in ("truth", "agent", "report"):
        np.testing.assert_array_equal(getattr(back, field), getattr(cset, field))
    quoted = CalibrationSet(("flu, severe", "cold"), ("dr \"x\"",), ("c1", "c2"), [0, 1], [0, 0], [1, 1])
    again, _ = parse_calibration_csv(quoted.to_csv())
    assert again.labels == ("cold", "flu, severe") and again.agents == ('dr "x"',)
    np.testing.assert_array_equal(again.counts(), [[[1, 0], [1, 0]]])


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("data, fragment", [
    ("", "file: is empty"),
    (b"  \n\n", "file: is empty"),
    (b"case_id,agent,reported_label,true_label\nc1,A,\xff\xfe,b\n", "not UTF-8"),
    ("case_id;agent;reported_label;true_label\nc1;A;a;b\n", "separated by semicolons"),
    ("case_id,agent,label\nc1,A,a\n", "missing required column reported_label in the header"),
        ("case_id,label\nc1,a\n", "missing required columns agent, reported_label"),
    ("case_id,agent,reported_label,true_label\nc1,A,a,a\nc2,A,b\n", "line 3 has 3 fields but the header has 4"),
    ('case_id,agent,reported_label,true_label\nc1,A,"a"x,a\n', "line 2 is not valid CSV"),
    ("case_id,agent,reported_label,true_label\nc1,A,a,a\nc1,B,b,\n",
         "line 3: case 'c1' has no true label but line 2 gives 'a'; a case has one true label, given on every row"),
        ("case_id,agent,reported_label,true_label\nc1,A,a,\nc1,B,b,b\n",
         "line 3: case 'c1' has true label 'b' but line 2 leaves it blank"),
        ("case_id,agent,reported_label,true_label\nc1,A,a,a\nc2,A,b,\n", "one-coin cannot identify"),
    ("case_id,agent,reported_label,true_label\nc1,A,a,a\n  ,A,b,b\n", "line 3 has an empty case_id"),
    ("case_id,agent,reported_label,true_label\n", "no data rows"),
    ("case_id,agent,reported_label,true_label\nc1,A,a,a\nc2,A,a,a\n", "found only 1 label ('a')"),
    ("case_id,agent,reported_label,true_label\nc1,A,a,a\nc2,A,b,b\nc1,A,b,a\n",
     "line 4: case 'c1' already has a row for agent 'A' (line 2)"),
    ("case_id,agent,reported_label,true_label\nc1,A,a,a\nc1,B,b,b\n",
     "line 3: case 'c1' has true label 'b' but line 2 gives 'a'"),
    ("case_id,agent,agent,reported_label,true_label\nc1,A,A,a,a\n", "column agent appears more than once"),
    ("\x00\x01", "NUL bytes"),
    ('case_id,agent,reported_label,true_label\nc1,A,"a,a\n', "line 2 is not valid CSV (unexpected end of data)"),
    ("case_id,agent,reported_label,true_label\nc1,A," + "x" * 200_000 + ",a\n", "field larger than field limit"),
])
def test_errors_name_the_problem(data: bytes | str, fragment: str) -> None:
    assert fragment in error(data)


def test_label_not_in_given_set() -> None:
    msg = error(HAND.replace("c3,A,a,b", "c3,A,zz,b"), labels=["a", "b", "c"])
    assert "reported_label: line 6: label 'zz' is not one of the given labels (a, b, c)" in msg
    assert "line 2: label 'a'" in error(HAND, labels=["b", "c"])


def test_empty_class_with_explicit_labels() -> None:
    msg = error(HAND, labels=["a", "b", "c", "d"])
    assert "class 'd' has no calibration rows" in msg


def test_label_only_reported_is_a_warning() -> None:
    text = HAND.replace("c4,A,c,c\nc4,B,c,c\n", "c4,A,c,b\nc4,B,c,b\n")
    cset, warnings = parse_calibration_csv(text)
    assert cset.labels == ("a", "b", "c")
    assert any("class 'c' appears only as a reported label" in w for w in warnings)


def test_size_limits() -> None:
    assert f"is {len(HAND.encode())} bytes; the limit is 100 bytes" in error(HAND.encode(), max_bytes=100)
    assert "the limit is 100 bytes" in error(HAND, max_bytes=100)
    assert "more than 5 data rows; the limit is 5 rows" in error(HAND, max_rows=5)
    parse_calibration_csv(HAND, max_rows=8)
    assert "max_rows: must be a positive integer" in error(HAND, max_rows=0)


def test_bad_label_list_and_type() -> None:
    assert "labels: at least 2 labels are needed, got 1" in error(HAND, labels=["a"])
    assert "label 'a' is listed twice" in error(HAND, labels=["a", "a", "b"])
    assert "expected the file's bytes or text" in error(123)  # type: ignore[arg-type]


def test_dataclass_validation() -> None:
    with pytest.raises(InputError, match="case 'c1' has two rows for agent 'A'"):
        CalibrationSet(("a", "b"), ("A",), ("c1", "c1"), [0, 0], [0, 0], [0, 1])
    with pytest.raises(InputError, match=r"indices must lie in 0\.\.1"):
        CalibrationSet(("a", "b"), ("A",), ("c1",), [2], [0], [0])
    with pytest.raises(InputError, match="agent 'B' has no rows"):
        CalibrationSet(("a", "b"), ("A", "B"), ("c1",), [0], [0], [0])
    with pytest.raises(InputError, match="has 1 entries for 2 rows"):
        CalibrationSet(("a", "b"), ("A",), ("c1", "c2"), [0], [0, 0], [0, 0])
    cset = hand_set()
    with pytest.raises(Exception):
        cset.truth[0] = 1  # read-only


# ------------------------------------------------------------------ merge
def test_merge_adds_rows_and_agents() -> None:
    cset = hand_set()
    extra = CalibrationSet(("a", "b", "c"), ("C", "A"), ("r1", "r1", "r2"), [2, 2, 0], [0, 1, 1],
                           [2, 1, 0], "reviews")
    merged = cset.merge(extra)
    assert merged.agents == ("A", "B", "C")
    assert merged.n_rows == 11 and merged.source == "uploaded CSV + reviews"
    np.testing.assert_array_equal(merged.counts()[:2].sum(axis=(1, 2)), [6, 4])
    np.testing.assert_array_equal(merged.counts()[0] - cset.counts()[0], [[1, 0, 0], [0, 0, 0], [0, 1, 0]])
    np.testing.assert_array_equal(merged.counts()[2], [[0, 0, 0], [0, 0, 0], [0, 0, 1]])
    with pytest.raises(InputError, match="cannot merge sets with different labels: a, b, c vs c, b, a"):
        cset.merge(CalibrationSet(("c", "b", "a"), ("A",), ("r1",), [0], [0], [0]))
    with pytest.raises(InputError, match="case 'c1' has two rows for agent 'A'"):
        cset.merge(cset)


# ------------------------------------------------------------------ built-in sets
def test_example_file_matches_example_csv() -> None:
    text = example_csv()
    assert text == example_csv()
    assert (ROOT / "data" / "examples" / "calibration_example.csv").read_text(encoding="utf-8") == text
    cset, warnings = parse_calibration_csv(text)
    assert warnings == []
    assert cset.labels == ("k0", "k1", "k2") and cset.agents == ("agent 1", "agent 2")
    assert cset.n_cases == 30 and cset.n_rows == 60
    assert np.all(cset.class_counts() > 0)


def test_synthetic_set_shape_and_accuracy() -> None:
    cset = synthetic_calibration_set("S2", 3, n=1000)
    assert cset.labels == ("k0", "k1", "k2") and cset.agents == ("agent 1", "agent 2")
    assert cset.n_cases == 800 and cset.n_rows == 1600  # 1000 - min(1000, 200) tuning cases
    acc = cset.accuracy()
    # S2 at the specification's sharpness: agent 1 about 0.64, agent 2 about 0.42
    assert 0.55 < acc[0] < 0.75 and 0.3 < acc[1] < 0.55 and acc[0] > acc[1] + 0.1
    assert cset.counts().shape == (2, 3, 3) and cset.counts().sum() == 1600
    with pytest.raises(InputError, match="unknown scenario 'S9'"):
        synthetic_calibration_set("S9", 0)
    with pytest.raises(InputError, match="n: must be an integer >= 10"):
        synthetic_calibration_set("S1", 0, n=5)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    result = run_cell("S1", 0, n_train=2000, n_eval=30, ablation=False)
    path = tmp_path_factory.mktemp("store") / "runs.duckdb"
    with Store(path) as store:
        store.ensure_run("r1", kind="synthetic", spec={}, config=result.config, seeds=[0])
        store.save_cell("r1", result)
    return path, result


def test_synthetic_set_matches_the_run_panel(stored: tuple[Path, object]) -> None:
    _, result = stored
    cset = synthetic_calibration_set("S1", 0, n=2000)
    assert cset.n_cases == 1600
    np.testing.assert_allclose(cset.confusion(), result.panel.confusion, atol=1e-12)  # type: ignore[attr-defined]
    np.testing.assert_allclose(cset.prior("empirical"), result.panel.prior, atol=1e-12)  # type: ignore[attr-defined]
    np.testing.assert_allclose(cset.accuracy(), result.info["calibration_accuracy"])  # type: ignore[attr-defined]


def test_stored_run_set(stored: tuple[Path, object]) -> None:
    path, result = stored
    with Store(path) as store:
        cset = stored_run_calibration_set(store, "r1", "S1", 0)
        with pytest.raises(StoreError):
            stored_run_calibration_set(store, "r1", "S2", 0)
    first = result.methods["dcem"].reports[:, 0, :]  # type: ignore[attr-defined]
    assert cset.agents == ("agent 1", "agent 2") and cset.labels == ("k0", "k1", "k2")
    assert cset.n_cases == 30 and cset.n_rows == 60
    assert set(cset.case_ids) == set(result.case_ids)  # type: ignore[attr-defined]
    np.testing.assert_allclose(cset.confusion(),
                               estimate_confusion(result.truth, first, 3))  # type: ignore[attr-defined]
    assert "evaluation cases" in cset.source
    panel = cset.to_panel(synthetic_loss(), prior_mode="empirical")
    assert panel.n_agents == 2


def test_rows_to_set_allows_empty_classes_and_merges() -> None:
    import pandas as pd

    from dcem.calibration.sets import rows_to_set

    rows = pd.DataFrame({"case_id": ["r1", "r1"], "agent": ["agent 1", "agent 2"],
                         "reported_label": ["k0", "k2"], "true_label": ["k1", "k1"]})
    small = rows_to_set(rows, ("k0", "k1", "k2"), "reviews")
    assert small.n_cases == 1 and small.class_counts().tolist() == [0, 1, 0]
    assert small.counts()[1, 1, 2] == 1
    big = synthetic_calibration_set("S1", 0, n=1000)
    merged = big.merge(small)
    assert merged.n_cases == big.n_cases + 1
    with pytest.raises(InputError, match="'k7'"):
        rows_to_set(rows.assign(true_label="k7"), ("k0", "k1", "k2"), "x")
    with pytest.raises(InputError, match="missing columns: agent"):
        rows_to_set(rows.drop(columns=["agent"]), ("k0", "k1", "k2"), "x")
