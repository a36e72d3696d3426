"""Fuzz tests of the evaluation export and the store shipped beside it.

- ``sag report --from-export FILE`` (in-process through :func:`sag.cli.main`): the shipped
  export, mutated (values replaced by null, strings, NaN, huge numbers or nesting; keys
  dropped or added; numbers nudged; the text cut or a number token swapped).  Each input
  exits 2 with one ``error:`` line, or 0 with a report whose numbers are the export's
  (checked against the export's counts and item answers, and against rows formatted here).
- shipped store import (:func:`sag.evaluation.shipped.import_shipped_store`): gzip files
  of a small SAG store, a foreign DuckDB file or other bytes, in one or two members, with
  damage (cut, flipped byte, forged size trailer, bytes appended) and limits around their
  size.  Each input is refused cleanly, leaving no temporary file and the target store as
  it was, or imports the evaluation.

The default run tries a few hundred inputs per surface; ``pytest -m fuzz_large -s`` tries
10,000 per surface and prints the outcome counts.
"""
from __future__ import annotations

import contextlib
import copy
from collections import Counter
import gzip
import io
import json
import re
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

import pytest
from hypothesis import settings
from hypothesis import strategies as st

from common.errors import ProjectError
from sag.cli import main
from sag.group.config import preset
from sag.evaluation.shipped import import_shipped_store
from sag.evaluation.tables import BENCH_COLUMNS, render_report
from sag.store.eval_tables import evaluations, record_part
from sag.store.tables import SagStore
from clinical.questions import QuestionItem
from tests.dcem.fuzz_support import COUNTS, DEFAULT, LARGE, json_values, nest, number_tokens, run_budget

ROOT = Path(__file__).resolve().parents[3]
BASE_TEXT = (ROOT / "data" / "results" / "sag_eval_core.json").read_text(encoding="utf-8")
BASE = json.loads(BASE_TEXT)
EVAL_ID = "accuracy-n1"


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``value``; of the item answers only the first two items of a part."""
    out = [path]
    if isinstance(value, dict):
        for key, v in value.items():
            out += _paths(v, path + (key,))
    elif isinstance(value, list):
        limit = 2 if path[:1] == ("answers",) else len(value)
        for i, v in enumerate(value[:limit]):
            out += _paths(v, path + (i,))
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _is_number(path: tuple[Any, ...]) -> bool:
    value = _get(BASE, path)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


GROUPS = list(BASE["groups"])
TOP = {k: json.dumps(v) for k, v in BASE.items() if k not in ("groups", "answers")}
PIECES = {g: (json.dumps(BASE["groups"][g]), json.dumps(BASE["answers"][g])) for g in GROUPS}
ALL = _paths(BASE)[1:]
PATHS = {g: [p for p in ALL if p[1:2] == (g,) and p[0] in ("groups", "answers")] for g in GROUPS}
PATHS[""] = [p for p in ALL if p[0] not in ("groups", "answers") or len(p) == 1]
NUMBERS = {key: [p for p in paths if _is_number(p)] for key, paths in PATHS.items()}
_values = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 20), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8), st.sampled_from([10**400, 10**30, 1e308, -1e308, 1e-320, 0.5, 1.0, 0, -1, "NaN", "", "|",
                                          "sag-10", "medqa", [], {}, [0.5], {"n": 1}]),
    json_values)
_NUMBER = re.compile(r"(?<=[:\[,] )-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


@st.composite
def export_texts(draw: Any) -> str:
    """The shipped export, most often cut down to one to three of its groups (so an input
    is quick to read), with 0-3 mutations, then maybe cut short or a number token swapped."""
    groups = GROUPS if draw(st.integers(0, 9)) == 0 else draw(
        st.lists(st.sampled_from(GROUPS), min_size=1, max_size=3, unique=True))
    doc = {k: json.loads(v) for k, v in TOP.items()}
    doc["groups"] = {g: json.loads(PIECES[g][0]) for g in groups}
    doc["answers"] = {g: json.loads(PIECES[g][1]) for g in groups}
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 1, 2, 3]))):
        op = draw(st.sampled_from(["replace", "replace", "drop", "add", "nest", "swap", "nudge", "nudge"]))
        paths = (NUMBERS if op == "nudge" else PATHS)[draw(st.sampled_from(["", *groups, *groups]))]
        path = paths[draw(st.integers(0, len(paths) - 1))]
        try:
            parent, key = _get(doc, path[:-1]), path[-1]
            old = parent[key]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed the path
        if not isinstance(parent, (dict, list)):
            continue  # an earlier mutation replaced a container by a string
        if op == "replace":
            parent[key] = draw(_values)
        elif op == "drop":
            del parent[key]
        elif op == "add" and isinstance(old, dict):
            old[draw(st.sampled_from(["extra", "k", "n", "low", "gpqa", "sag-99", "accuracy/gpqa", "", "total"]))] = \
                draw(_values)
        elif op == "nest":
            parent[key] = nest(old, draw(st.integers(1, 3))) if draw(st.booleans()) else {"x": old}
        elif op == "swap":
            other = PATHS[draw(st.sampled_from(["", *groups]))]
            parent[key] = copy.deepcopy(_get(BASE, other[draw(st.integers(0, len(other) - 1))]))
        elif op == "nudge" and isinstance(old, (int, float)):
            parent[key] = old + draw(st.sampled_from([1e-13, -1e-13, 1e-6, 0.01, -0.01, 1, -1, 0.5]))
    text = json.dumps(doc)
    kind = draw(st.sampled_from(["json"] * 6 + ["cut", "token"]))
    if kind == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    elif kind == "token":
        spans = [m.span() for m in _NUMBER.finditer(text)]
        a, b = spans[draw(st.integers(0, len(spans) - 1))]
        text = text[:a] + draw(number_tokens) + text[b:]
    return text


def _cell(rate: Any) -> str:
    if not rate or not rate["n"]:
        return "-"
    return f"{100 * rate['value']:.1f} ({100 * rate['low']:.0f}-{100 * rate['high']:.0f})"


def _check_report(doc: dict[str, Any], out: str) -> None:
    """The report of an accepted export shows the export's numbers, and they are right."""
    assert out.startswith(f"# SAG evaluation {doc['eval_id']}\n") and out == render_report(doc)
    for group, v in doc["groups"].items():
        for bench, rate in v["accuracy"].items():
            items = doc["answers"][group][f"accuracy/{bench}"]["items"]
            assert rate["n"] == len(items) and rate["k"] == sum(1 for _, a, t in items if a == t), (group, bench)
            assert rate["n"] == 0 or abs(rate["value"] - rate["k"] / rate["n"]) < 1e-9
            assert rate["n"] == 0 or rate["low"] <= rate["value"] + 1e-9 and rate["value"] <= rate["high"] + 1e-9
        if v["config"]["method"].startswith("no_"):
            continue
        gap = "-" if v["gap"] is None else f"{100 * v['gap']:.1f}"
        row = " | ".join([group] + [_cell(v["accuracy"].get(b)) for b, _ in BENCH_COLUMNS]
                         + ["not shipped", "not shipped", gap])
        assert f"| {row} |\n" in out, row


def _cli_check(path: Path, surface: str) -> Callable[[str], str]:
    def check(text: str) -> str:
        path.write_text(text, encoding="utf-8")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["report", "--from-export", str(path)])
        if code == 2:
            message = err.getvalue()
            assert message.startswith("error: ") and message.count("\n") == 1, message
            assert "Traceback" not in message and out.getvalue() == ""
            return "error"
        assert code == 0 and err.getvalue() == "", (code, err.getvalue())
        try:
            _check_report(json.loads(text), out.getvalue())
        except AssertionError:
            COUNTS[surface]["wrong"] += 1
            raise
        return "valid"
    return check


def _report_surface(tmp_path: Path, budget: settings) -> None:
    surface = "sag report --from-export"
    COUNTS.setdefault(surface, Counter())
    counts = run_budget(surface, export_texts(), _cli_check(tmp_path / "e.json", surface), budget)
    print(f"fuzz {surface}: {counts['wrong']} silent wrong results")
    assert counts["error"] and counts["valid"] and counts["wrong"] == 0


def test_fuzz_report_from_export(tmp_path: Path) -> None:
    _report_surface(tmp_path, settings(DEFAULT, max_examples=60))


@pytest.mark.fuzz_large
@pytest.mark.timeout(3600)  # 10,000 reports of a 377 kB file
def test_fuzz_report_from_export_large(tmp_path: Path) -> None:
    _report_surface(tmp_path, LARGE)


# ---------------------------------------------------------------- the shipped store


def _small_store(folder: Path) -> bytes:
    """A SAG store holding the evaluation EVAL_ID (one part, one item), as bytes."""
    path = folder / "small.duckdb"
    cfg = preset("single")
    item = QuestionItem("medqa-0001", "Which?", (("A", "a"), ("B", "b")), "A", "medqa")
    with SagStore(path) as store:
        store.ensure_run("eval-accuracy.medqa-single-x", benchmark="medqa", cfg=cfg, items=[item], seed=0)
        record_part(store, eval_id=EVAL_ID, group="single", part="accuracy/medqa", metric="accuracy",
                    run_id="eval-accuracy.medqa-single-x", spec={"suite": "accuracy"}, config=cfg.to_dict(),
                    extra={}, position=0)
    return path.read_bytes()


def _foreign_duckdb(folder: Path) -> bytes:
    import duckdb

    path = folder / "foreign.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE t AS SELECT 1 AS x")
    return path.read_bytes()


Case = tuple[bytes, Optional[int], bool, bool]


@st.composite
def packed_files(draw: Any, payloads: dict[str, bytes]) -> Case:
    """(file bytes, limit, whether it must import: the store packed intact within the limit,
    whether it may import: the store packed within the limit, whatever the damage, since
    gzip ignores some bytes of its header and zeros after a member)."""
    kind = draw(st.sampled_from(["store", "store", "foreign", "header", "header", "bytes", "bytes", "empty"]))
    payload = payloads.get(kind) if kind in payloads else (
        b"\0" * 8 + b"DUCK" + draw(st.binary(max_size=3000)) if kind == "header"
        else draw(st.binary(max_size=3000)) if kind == "bytes" else b"")
    packing = draw(st.sampled_from(["gzip", "gzip", "gzip", "two members", "raw"]))
    if packing == "raw":
        data = payload
    elif packing == "two members":
        cut = draw(st.integers(0, len(payload)))
        data = gzip.compress(payload[:cut], mtime=0) + gzip.compress(payload[cut:], mtime=0)
    else:
        data = payloads.get(f"{kind}.gz") or gzip.compress(payload, mtime=0)
    damaged = False
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2]))):
        op = draw(st.sampled_from(["cut", "flip", "size", "append", "zeros"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "cut":
            data = data[:at]
        elif op == "flip" and data:
            data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1:]
        elif op == "size" and len(data) >= 4:
            data = data[:-4] + draw(st.integers(0, 2**32 - 1)).to_bytes(4, "little")
        elif op == "append":
            data += draw(st.binary(min_size=1, max_size=40))
        else:
            data += b"\0" * draw(st.integers(1, 20))
        damaged = True
    size = len(payload)
    limit = draw(st.sampled_from([None, size, size - 1, size + 1, 0, 12, 4096, size // 2]))
    allowed = kind == "store" and packing != "raw" and (limit is None or limit >= size)
    return data, limit, allowed and not damaged, allowed


def _fingerprint(store: SagStore) -> tuple[Any, ...]:
    """What an import changes: the rows of the evaluation, run and item tables."""
    return tuple(store.con.execute("SELECT (SELECT count(*) FROM sag_eval_parts), (SELECT count(*) FROM sag_runs), "
                                   "(SELECT count(*) FROM sag_items)").fetchone() or ())


def _left(temp: Path) -> list[Path]:
    """What an import left in the temporary folder: anything but the (empty) scratch parent."""
    return [p for p in temp.rglob("*") if not (p.is_dir() and not any(p.iterdir()))]


def _import_check(target: SagStore, folder: Path, temp: Path) -> Callable[[Case], str]:
    packed = folder / "sag_eval_small.duckdb.gz"

    def check(case: Case) -> str:
        data, limit, intact, allowed = case
        packed.write_bytes(data)
        before = _fingerprint(target)
        try:
            import_shipped_store(target, packed, EVAL_ID, limit=limit)
        except ProjectError as exc:
            message = str(exc)
            assert message.count("\n") == 0 and "sag_eval_small.duckdb" in message and str(temp) not in message
            assert not intact, message  # an intact store within the limit is never refused
            assert _fingerprint(target) == before and not _left(temp)
            return "error"
        try:
            assert allowed, "an import succeeded from a damaged, foreign or oversized file"
            assert EVAL_ID in set(evaluations(target)["eval_id"]) and not _left(temp)
        except AssertionError:
            COUNTS["shipped store import"]["wrong"] += 1
            raise
        return "valid"
    return check


def _import_surface(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: settings) -> None:
    payloads = {"store": _small_store(tmp_path), "foreign": _foreign_duckdb(tmp_path)}
    payloads["store.gz"] = gzip.compress(payloads["store"], mtime=0)
    temp = tmp_path / "temp"
    temp.mkdir()
    COUNTS.setdefault("shipped store import", Counter())
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    with SagStore(tmp_path / "mine.duckdb") as target:
        check = _import_check(target, tmp_path, temp)
        assert check((payloads["store.gz"], None, True, True)) == "valid"  # the store packed whole imports
        counts = run_budget("shipped store import", packed_files(payloads), check, budget)
    print(f"fuzz shipped store import: {counts['wrong']} silent wrong results")
    assert counts["error"] and counts["valid"]


def test_fuzz_shipped_store_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _import_surface(tmp_path, monkeypatch, settings(DEFAULT, max_examples=60))


@pytest.mark.fuzz_large
@pytest.mark.timeout(3600)  # 10,000 files, a few hundred of them imported into a store
def test_fuzz_shipped_store_import_large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _import_surface(tmp_path, monkeypatch, LARGE)
