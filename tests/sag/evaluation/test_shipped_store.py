"""Importing the store shipped beside an evaluation file: the evaluation arrives whole,
and a file that is not such a store changes nothing and says why."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from common.errors import InputError
from sag.group.config import preset
from sag.evaluation.export import build_export, latest_eval_id
from sag.evaluation.runner import run_group_eval
from sag.evaluation.shipped import companion_store, import_shipped_store
from sag.evaluation.suite import SuiteSpec
from sag.store.eval_tables import evaluations
from sag.store.tables import SagStore
from tests.sag.fakes import ScriptedTurns


def _answer_b(agent: str, prompt: str, request) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    return ("B" if "B" in request.options else request.options[0]), "It fits. NEW: no"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A gzipped store holding an accuracy evaluation of one scripted group, and its id."""
    folder = tmp_path_factory.mktemp("shipped")
    raw = folder / "made.duckdb"
    with SagStore(raw) as store:
        cfg = preset("single")
        run_group_eval(store, SuiteSpec("accuracy", n_items=2), cfg,
                       runners={m: ScriptedTurns(_answer_b) for m in cfg.models()}, measure_memory=False)
        eval_id = latest_eval_id(store)
    packed = folder / "sag_eval_small.duckdb.gz"
    with raw.open("rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return packed, eval_id


def _scores(path: Path, eval_id: str) -> dict:  # type: ignore[type-arg]
    with SagStore(path, read_only=True) as store:
        scored = build_export(store, eval_id)
    return {g: v["accuracy"] for g, v in scored["groups"].items()}


def test_the_companion_is_the_packed_store_of_the_same_name(tmp_path: Path) -> None:
    export = tmp_path / "sag_eval_small.json"
    assert companion_store(export) is None
    (tmp_path / "sag_eval_small.duckdb.gz").write_bytes(b"")
    assert companion_store(export) == tmp_path / "sag_eval_small.duckdb.gz"
    assert companion_store(tmp_path / "other.json") is None


def test_an_import_brings_the_whole_evaluation_once(shipped: tuple[Path, str], tmp_path: Path) -> None:
    packed, eval_id = shipped
    target = tmp_path / "mine.duckdb"
    with SagStore(target) as store:
        report = import_shipped_store(store, packed, eval_id)
        assert report.added > 0
        assert list(evaluations(store)["eval_id"]) == [eval_id]
        again = import_shipped_store(store, packed, eval_id)
        assert again.added == 0  # merging the same file again adds nothing
    raw = tmp_path / "raw.duckdb"
    with gzip.open(packed, "rb") as src, raw.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    assert _scores(target, eval_id) == _scores(raw, eval_id)  # scored from either store, the same numbers


@pytest.mark.parametrize("content, reason", [
    (b"plain bytes, not gzip", "cannot be unpacked"),
    (gzip.compress(b"gzip of something that is not a store", mtime=0), "is not a SAG evaluation store"),
], ids=["not gzip", "gzip, not a store"])
def test_a_file_that_is_not_a_packed_store_changes_nothing(content: bytes, reason: str, shipped: tuple[Path, str],
                                                           tmp_path: Path) -> None:
    bad = tmp_path / "sag_eval_bad.duckdb.gz"
    bad.write_bytes(content)
    with SagStore(tmp_path / "mine.duckdb") as store:
        with pytest.raises(InputError, match=reason) as err:
            import_shipped_store(store, bad, shipped[1])
        assert "sag_eval_bad.duckdb" in str(err.value) and str(tmp_path) not in str(err.value)
        assert evaluations(store).empty


def test_a_truncated_file_changes_nothing(shipped: tuple[Path, str], tmp_path: Path) -> None:
    cut = tmp_path / "sag_eval_cut.duckdb.gz"
    cut.write_bytes(shipped[0].read_bytes()[: shipped[0].stat().st_size // 2])
    with SagStore(tmp_path / "mine.duckdb") as store:
        with pytest.raises(InputError, match="cannot be unpacked"):
            import_shipped_store(store, cut, shipped[1])
        assert evaluations(store).empty


def test_a_store_without_the_evaluation_is_refused(shipped: tuple[Path, str], tmp_path: Path) -> None:
    with SagStore(tmp_path / "mine.duckdb") as store:
        with pytest.raises(InputError, match="does not hold the evaluation 'core-n99-c1'"):
            import_shipped_store(store, shipped[0], "core-n99-c1")
        assert evaluations(store).empty
