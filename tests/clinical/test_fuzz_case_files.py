"""Fuzz tests of case files: near-valid JSONL and CSV files with mutated lines, bad bytes
and hostile text.  Every file ends in one :class:`~common.errors.ProjectError` or a dataset
that agrees with an independent plain-:mod:`json` reading of the same bytes (the same ids,
texts and labels, in file order; labels sorted).  ``pytest -m fuzz_large -s`` tries 10,000."""
from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st

from clinical.case_file import parse_case_file
from common.errors import ProjectError
from tests.dcem.fuzz_support import DEFAULT, LARGE
from tests.sag.fuzz_inputs import HOSTILE, encode, mutate_text, run_surface

SURFACE = "case files"
LABELS = ["Flu", "Cold", "Croup", "1", HOSTILE.strip()]


def _pick(draw: Any, good: list[Any], bad: list[Any]) -> Any:
    """A good value, or a bad one time in twelve."""
    return draw(st.sampled_from(bad if draw(st.integers(0, 11)) == 0 else good))


@st.composite
def case_dicts(draw: Any, i: int) -> dict[str, Any]:
    case: dict[str, Any] = {"id": _pick(draw, [f"c{i}", i], ["", " ", "c0", None, 1.5, "a\tb"]),
                            "text": _pick(draw, ["A cough for two days.", "Fever" + HOSTILE, "x" * 50], ["", 3, None]),
                            "label": _pick(draw, LABELS[:2] + [LABELS[i % 3]], [LABELS[3], LABELS[4], None, 2.5, True])}
    if draw(st.integers(0, 3)) == 0:
        case["views"] = _pick(draw, [{"history": "old"}, {"exam": "x", "history": "y"}],
                              [{"all": "x"}, {"h": ""}, ["history"], {"h": 1}])
    if draw(st.integers(0, 7)) == 0:
        case["split"] = draw(st.sampled_from(["cal", "test", "train", "TEST", "dev", 1]))
    for key in ("id", "text", "label"):
        if case[key] is None:
            del case[key]
    return case


@st.composite
def case_files(draw: Any) -> tuple[bytes, str]:
    n = draw(st.integers(1, 10))
    rows = [draw(case_dicts(i)) for i in range(n)]
    if draw(st.booleans()):
        lines = [mutate_text(draw, json.dumps(r, ensure_ascii=draw(st.booleans()))) for r in rows]
        return encode(draw, "\n".join(lines) + "\n"), "cases.jsonl"
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["id", "text", "label"])
    for r in rows:
        writer.writerow([r.get("id", ""), r.get("text", ""), r.get("label", "")])
    return encode(draw, out.getvalue()), "cases.csv"


def _reference(data: bytes, name: str) -> list[tuple[str, str, str]]:
    """(id, text, label) per case by a plain reading of the same bytes."""
    import csv
    import io

    text = data.decode("utf-8").lstrip("\ufeff")
    if name.endswith(".csv"):
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
        return [(r["id"].strip(), r["text"], r["label"].strip()) for r in rows if any(v.strip() for v in r.values())]
    objs = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [(str(o["id"]).strip(), o["text"], str(o["label"]).strip()) for o in objs]


def _check(value: tuple[bytes, str]) -> str:
    data, name = value
    try:
        ds = parse_case_file(data, name)
    except ProjectError as exc:
        assert str(exc).strip() and "\n" not in str(exc).strip() or "line" in str(exc)
        return "error"
    got = [(c.source_id, c.text, ds.labels[c.label]) for c in ds.cases]
    assert got == _reference(data, name)
    assert list(ds.labels) == sorted(set(ds.labels)) and len(ds.labels) >= 2
    assert len({c.source_id for c in ds.cases}) == len(ds.cases)
    assert all(x.isprintable() for c in ds.cases for x in (c.source_id, ds.labels[c.label]))
    return "valid"


def _fuzz(budget: settings) -> None:
    counts = run_surface(SURFACE, case_files(), _check, budget)
    assert counts["error"] and counts["valid"]


def test_fuzz_case_files() -> None:
    _fuzz(settings(DEFAULT, max_examples=300))


@pytest.mark.fuzz_large
@pytest.mark.timeout(7200)
def test_fuzz_case_files_large() -> None:
    _fuzz(LARGE)
