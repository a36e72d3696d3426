"""``sag report --from-export`` and ``--export`` with bad input: one ``error:`` line and
exit status 2, never a traceback, and nothing written.  Every export is checked field by
field as it is loaded (:mod:`sag.evaluation.export_check`); the shipped export passes."""
from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any, Callable

import pytest

from common.errors import InputError
from sag.cli import main
from sag.evaluation.export import load_export, write_export
from sag.evaluation.reading import honest_reading
from sag.evaluation.tables import render_report

ROOT = Path(__file__).resolve().parents[3]
EXPORT = ROOT / "data" / "results" / "sag_eval_core.json"
BASE = EXPORT.read_text(encoding="utf-8")


def _doc() -> dict[str, Any]:
    return json.loads(BASE)


def _report(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["report", *args])
    return code, out.getvalue(), err.getvalue()


def _refused(code: int, out: str, err: str) -> str:
    assert code == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1, (code, err)
    assert "Traceback" not in err
    return err


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


def _drop(path: tuple[Any, ...]) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return change


def _rename_group(doc: dict[str, Any]) -> None:
    doc["answers"]["sag-X"] = doc["answers"].pop("sag-10")


def _one_more_clean(doc: dict[str, Any]) -> None:
    doc["groups"]["single"]["robustness"]["medqa"]["clean"]["k"] += 1


MEDQA = ("groups", "sag-10", "accuracy", "medqa")
CASES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("null interval bound", _set(MEDQA + ("low",), None), "groups.sag-10.accuracy.medqa.low must be a number"),
    ("bound out of order", _set(MEDQA + ("high",), 0.05), "groups.sag-10.accuracy.medqa.high is 0.05, but 3 of 10"),
    ("string count", _set(MEDQA + ("n",), "10"), "groups.sag-10.accuracy.medqa.n must be a whole number"),
    ("negative count", _set(MEDQA + ("k",), -1), "groups.sag-10.accuracy.medqa.k must be a whole number in [0, 10]"),
    ("true as count", _set(MEDQA + ("n",), True), "groups.sag-10.accuracy.medqa.n must be a whole number"),
    ("more right than items", _set(MEDQA + ("k",), 11), "accuracy.medqa.k must be a whole number in [0, 10]"),
    ("rate beside its counts", _set(MEDQA + ("value",), 0.9), "accuracy.medqa.value is 0.9, but 3 of 10 gives 0.3"),
    ("percentage above 100 %", _set(("groups", "single", "safety", "roc", "auc"), 1.5),
     "groups.single.safety.roc.auc must be a number in [0, 1]"),
    ("counts beside the item answers", _set(("answers", "sag-10", "accuracy/medqa", "items"), []),
     "groups.sag-10.accuracy.medqa must count the 0 answers"),
    ("a missing field", _drop(MEDQA + ("high",)), "groups.sag-10.accuracy.medqa.high is missing"),
    ("an unknown field", _set(("groups", "sag-10", "speed"), 1), "groups.sag-10.speed is not a field"),
    ("an unknown benchmark", _set(("groups", "sag-10", "accuracy", "gpqa"), {}),
     "groups.sag-10.accuracy.gpqa is not a known name"),
    ("a group missing from answers", _rename_group, "answers must hold the answers of the same groups"),
    ("a config named apart", _set(("groups", "single", "config", "name"), "sag-6"),
     "groups.single.config.name must be 'single'"),
    ("a gap beside the accuracies", _set(("groups", "single", "gap"), 0.9), "groups.single.gap must be"),
    ("a group as a list", _set(("groups", "single"), []), "groups.single must be an object, got a list"),
    ("an escalation total apart", _set(("groups", "single", "escalated", "total", "items"), 1),
     "groups.single.escalated.total must count"),
    ("a std beside its runs", _set(("groups", "single", "consistency", "medqa", "base", "std"), 1.0),
     "groups.single.consistency.medqa.base.std must be"),
    ("robustness beside accuracy", _one_more_clean, "groups.single.robustness.medqa.clean"),
    ("a table-breaking group name", _set(("eval_id",), "core|n10"), "eval_id must be one printable line"),
    ("no groups", _set(("groups",), {}), "groups holds no group"),
    ("a dominant answer not flagged", _set(("groups", "sag-10", "fairness", "dominant", "flagged"), False),
     "groups.sag-10.fairness.dominant.flagged must be true: the share is above 0.5"),
    ("a share beside its counts", _set(("groups", "single", "consistency", "medqa", "dominant", "share"), 0.9),
     "groups.single.consistency.medqa.dominant.share is 0.9, but 61 of 125"),
    ("a dominant answer missing", _drop(("groups", "single", "fairness", "dominant")),
     "groups.single.fairness.dominant is missing"),
    ("more cached items than items", _set(("groups", "single", "deployment", "cached_items"), 61),
     "groups.single.deployment.cached_items must be a whole number in [0, 60]"),
]


@pytest.mark.parametrize("change, message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_malformed_export_is_refused_naming_the_field(change: Callable[[dict[str, Any]], None], message: str,
                                                        tmp_path: Path) -> None:
    doc = _doc()
    change(doc)
    path = tmp_path / "e.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    err = _refused(*_report("--from-export", str(path)))
    assert message in err, err
    with pytest.raises(InputError, match="export"):
        load_export(path)


@pytest.mark.parametrize("text, message", [
    (BASE.replace('"value": 0.3', '"value": NaN', 1), "NaN is not a number"),
    (BASE.replace('"k": 3', '"k": ' + "9" * 500, 1), "is too large"),
    (BASE[: len(BASE) // 2], "is not valid JSON"),
    ("[" * 5000 + "]" * 5000, "nested too deeply"),
    ("", "is not valid JSON"),
], ids=["NaN", "huge integer", "truncated", "deep nesting", "empty"])
def test_text_that_is_not_a_clean_export_is_refused(text: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    path.write_text(text, encoding="utf-8")
    assert message in _refused(*_report("--from-export", str(path)))


def test_an_export_that_is_not_utf8_or_a_folder_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    path.write_bytes(b"\xff\xfe{}")
    assert "is not UTF-8 text" in _refused(*_report("--from-export", str(path)))
    assert "manifest.json is missing" in _refused(*_report("--from-export", str(tmp_path)))  # a folder: an export folder
    assert "cannot read" in _refused(*_report("--from-export", ""))


def test_the_shipped_export_passes_and_a_written_copy_reads_back_the_same(tmp_path: Path) -> None:
    data = load_export(EXPORT)
    code, out, err = _report("--from-export", str(EXPORT), "--export", str(tmp_path / "copy.json"))
    assert code == 0 and out == render_report(data) and err == f"wrote {tmp_path / 'copy.json'}\n"
    assert load_export(tmp_path / "copy.json") == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.json"]


@pytest.mark.parametrize("target, message", [
    ("out", "is a folder"),
    ("missing/e.json", "the folder"),
    ("a file/e.json", "the folder"),
], ids=["a folder", "a missing folder", "a file as folder"])
def test_an_export_path_that_cannot_be_written_writes_nothing(target: str, message: str, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "a file").write_text("x", encoding="utf-8")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    err = _refused(*_report("--from-export", str(EXPORT), "--export", str(tmp_path / target)))
    assert message in err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_an_empty_export_path_is_refused() -> None:
    assert "give the path of a JSON file to write" in _refused(*_report("--from-export", str(EXPORT), "--export", ""))


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_file(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "e.json"
    target.write_text("old", encoding="utf-8")

    def denied(src: Any, dst: Any) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", denied)
    err = _refused(*_report("--from-export", str(EXPORT), "--export", str(target)))
    assert "cannot write" in err and "Permission denied" in err
    assert target.read_text(encoding="utf-8") == "old" and [p.name for p in tmp_path.iterdir()] == ["e.json"]
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)
    assert "permission denied" in _refused(*_report("--from-export", str(EXPORT), "--export", str(target)))
    with pytest.raises(InputError, match="permission denied"):
        write_export(_doc(), target)


def test_the_reading_compares_costs_only_with_a_positive_time() -> None:
    doc = _doc()
    for name in ("single", "single-gemma"):
        doc["groups"][name]["deployment"]["seconds_per_item"] = 0.0
    lines = honest_reading(doc)
    assert not any(line.startswith("Cost:") for line in lines)
    doc["groups"]["single"]["deployment"]["seconds_per_item"] = 2.0
    assert any(line.startswith("Cost:") and "single 1.0x" in line for line in honest_reading(doc))
