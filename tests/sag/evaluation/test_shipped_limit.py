"""Unpacking the store shipped beside an evaluation file: a limit on the unpacked size
(the declared size first, then, authoritatively, the bytes streamed), and the gzip and
DuckDB headers checked before DuckDB opens anything.  A refused file leaves no partial
file behind and changes no store."""
from __future__ import annotations

import gzip
import random
from pathlib import Path

import duckdb
import pytest

from common.errors import InputError
from sag.evaluation import shipped
from sag.evaluation.shipped import MAX_UNPACKED_BYTES, import_shipped_store, unpack_store
from sag.store.eval_tables import evaluations
from sag.store.tables import SagStore

HEADER = b"\x00" * 8 + b"DUCK"


def _duckdb_bytes(folder: Path) -> bytes:
    path = folder / "tiny.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE t AS SELECT 1 AS x")
    return path.read_bytes()


def _forge_isize(data: bytes, size: int) -> bytes:
    return data[:-4] + (size % 2**32).to_bytes(4, "little")


def test_the_limit_is_a_generous_multiple_of_the_shipped_store() -> None:
    assert MAX_UNPACKED_BYTES == 2**30 > 5 * 137_000_000


def test_a_small_store_unpacks_whole(tmp_path: Path) -> None:
    payload = _duckdb_bytes(tmp_path)
    packed = tmp_path / "s.duckdb.gz"
    packed.write_bytes(gzip.compress(payload, mtime=0))
    unpack_store(packed, tmp_path / "raw.duckdb", limit=len(payload))
    assert (tmp_path / "raw.duckdb").read_bytes() == payload


def test_a_declared_size_above_the_limit_is_refused_before_unpacking(tmp_path: Path) -> None:
    packed = tmp_path / "big.duckdb.gz"
    packed.write_bytes(gzip.compress(HEADER + bytes(100_000), mtime=0))
    with pytest.raises(InputError, match="declares an unpacked size of more than the limit of 4,096 bytes"):
        unpack_store(packed, tmp_path / "raw.duckdb", limit=4096)
    assert not (tmp_path / "raw.duckdb").exists()


@pytest.mark.parametrize("forge", ["isize modulo 2**32", "small last member"])
def test_the_streamed_size_stops_at_the_limit_whatever_the_declared_size(forge: str, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    big = gzip.compress(HEADER + bytes(100_000), mtime=0)
    data = _forge_isize(big, 2**32 + 10) if forge.startswith("isize") else big + gzip.compress(b"x", mtime=0)
    packed = tmp_path / "lies.duckdb.gz"
    packed.write_bytes(data)
    assert shipped._declared_size(packed) <= 4096  # the declared size alone would let it through
    monkeypatch.setattr(shipped, "_CHUNK", 1024)
    opened: list[_Counting] = []
    real_open = gzip.open
    monkeypatch.setattr(gzip, "open", lambda *args, **kwargs: opened.append(_Counting(real_open(*args, **kwargs)))
                        or opened[-1])
    with pytest.raises(InputError, match="unpacks to more than the limit of 4,096 bytes"):
        unpack_store(packed, tmp_path / "raw.duckdb", limit=4096)
    assert not (tmp_path / "raw.duckdb").exists()
    assert 4096 < opened[0].count <= 4096 + 1024  # stopped at the first chunk past the limit, of 100,012 bytes


class _Counting:
    """A gzip reader that counts the bytes it hands out."""

    def __init__(self, inner: gzip.GzipFile) -> None:
        self.inner, self.count = inner, 0

    def __enter__(self) -> "_Counting":
        return self

    def __exit__(self, *exc: object) -> None:
        self.inner.close()

    def read(self, size: int) -> bytes:
        chunk = self.inner.read(size)
        self.count += len(chunk)
        return chunk


@pytest.mark.parametrize("content, reason", [
    (b"", "not a gzip file"),
    (b"PK\x03\x04 a zip file, not gzip", "not a gzip file"),
    (b"\x1f\x8b", "not a gzip file"),
    (gzip.compress(b"a text, not a database " * 10, mtime=0), "its content is not a DuckDB database"),
    (gzip.compress(b"DUCK", mtime=0), "its content is not a DuckDB database"),
    (gzip.compress(b"", mtime=0), "its content is not a DuckDB database"),
    (gzip.compress(HEADER + random.Random(0).randbytes(50_000), mtime=0)[:-3000], "cannot be unpacked"),
    (_forge_isize(gzip.compress(HEADER + bytes(500), mtime=0), 7), "cannot be unpacked"),
    (gzip.compress(HEADER, mtime=0) + b"trailing garbage", "cannot be unpacked"),
], ids=["empty", "zip", "magic only", "text", "short", "nothing", "truncated", "wrong size", "garbage after"])
def test_a_damaged_or_foreign_file_is_refused_before_duckdb(content: bytes, reason: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    packed = tmp_path / "bad.duckdb.gz"
    packed.write_bytes(content)

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("DuckDB opened a refused file")

    monkeypatch.setattr(duckdb, "connect", never)
    with pytest.raises(InputError, match=reason) as err:
        unpack_store(packed, tmp_path / "raw.duckdb")
    assert "bad.duckdb.gz" in str(err.value) and str(tmp_path) not in str(err.value)
    assert not (tmp_path / "raw.duckdb").exists()


def test_a_folder_or_a_missing_file_is_refused(tmp_path: Path) -> None:
    for packed in (tmp_path, tmp_path / "missing.duckdb.gz"):
        with pytest.raises(InputError, match="cannot be unpacked"):
            unpack_store(packed, tmp_path / "raw.duckdb")


def test_an_import_past_the_lowered_limit_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    packed = tmp_path / "sag_eval_x.duckdb.gz"
    packed.write_bytes(gzip.compress(_duckdb_bytes(tmp_path), mtime=0))
    monkeypatch.setattr(shipped, "MAX_UNPACKED_BYTES", 1000)
    with SagStore(tmp_path / "mine.duckdb") as store:
        with pytest.raises(InputError, match="more than the limit of 1,000 bytes"):
            import_shipped_store(store, packed, "core-n10-c5")
        assert evaluations(store).empty
    with SagStore(tmp_path / "mine.duckdb") as store:  # within the limit: unpacked, then refused as no SAG store
        with pytest.raises(InputError, match="is not a SAG evaluation store|does not hold the evaluation"):
            import_shipped_store(store, packed, "core-n10-c5", limit=10**7)
        assert evaluations(store).empty
