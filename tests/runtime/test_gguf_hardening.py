"""Hardening of the model runtime (issue defects 13-15) and a fuzz test of the GGUF header reader.

13. nested metadata arrays and lying counts give a clean error, never a RecursionError;
14. a file shorter than the tensor data its header promises is reported as truncated, and
    a corrupted cached model file of the same size is found and rebuilt;
15. ``file:`` keys name only files inside the models folder or the registry's own folders,
    and no error shows whether an outside path exists or any byte of a file.

The fuzz test feeds random bytes, crafted headers and mutated crafted headers to
:func:`read_gguf_header`: each must give a :class:`GgufError` or a valid header.
``pytest -m fuzz_large -s`` tries 10,000 inputs and prints the counts.
"""
from __future__ import annotations

import hashlib
import os
import struct
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

import runtime.model_cache
import runtime.registry
from runtime.backends import BackendError
from runtime.factory import make_backend
from runtime.gguf_info import (MAX_ARRAY_DEPTH, GgufCorruptError, GgufError, GgufHeader, check_gguf_file,
                               read_gguf_header)
from runtime.model_info import model_info
from runtime.registry import MODELS_ENV, allowed_model_dirs, models_dir, resolve
from tests.dcem.fuzz_support import DEFAULT, LARGE, run_budget
from tests.runtime.test_models import _fake_hub

ROOT = Path(__file__).resolve().parents[2]
U8, U32, F32, STRING, ARRAY, U64 = 0, 4, 6, 8, 9, 10


@pytest.fixture(autouse=True)
def private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private model cache and models folder (``tmp/models``)."""
    monkeypatch.setenv("DCEM_MODEL_CACHE", str(tmp_path / "model-cache"))
    models = tmp_path / "models"
    models.mkdir()
    monkeypatch.setenv(MODELS_ENV, str(models))
    return models


# ------------------------------------------------------------------ a GGUF writer
def _str(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def _kv(key: str, vtype: int, payload: bytes) -> bytes:
    return _str(key) + struct.pack("<I", vtype) + payload


def _gguf(kvs: list[bytes], tensors: list[tuple[str, list[int], int, int]] = (), data: bytes = b"", *,
          alignment: int = 32, kv_count: int | None = None, tensor_count: int | None = None) -> bytes:
    """A GGUF v3 file: the key/value pairs, the tensor records, padding, then ``data``."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors) if tensor_count is None else tensor_count,
                                len(kvs) if kv_count is None else kv_count) + b"".join(kvs)
    for name, dims, ttype, offset in tensors:
        out += _str(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", ttype, offset)
    return out + b"\0" * (-len(out) % alignment) + data


def _nested(depth: int) -> bytes:
    """An array value nested ``depth`` arrays deep: [[...[]...]]."""
    return struct.pack("<IQ", ARRAY, 1) * (depth - 1) + struct.pack("<IQ", U8, 0)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# ------------------------------------------------------------------ defect 13
def test_defect13_nested_arrays_of_a_60kb_file_give_a_clean_error(tmp_path: Path) -> None:
    depth = 5000  # 12 bytes a level: a 60 KB file, a RecursionError before
    path = _write(tmp_path / "nested.gguf", _gguf([_kv("x", ARRAY, _nested(depth))]))
    assert 59_000 < path.stat().st_size < 61_000
    with pytest.raises(GgufCorruptError, match=f"arrays nested more than {MAX_ARRAY_DEPTH} deep"):
        read_gguf_header(path)
    with pytest.raises(BackendError, match="nested"):
        model_info(path)  # no llama.cpp fallback for a corrupt file


def test_defect13_nesting_up_to_the_limit_is_read(tmp_path: Path) -> None:
    ok = read_gguf_header(_write(tmp_path / "ok.gguf", _gguf([_kv("x", ARRAY, _nested(MAX_ARRAY_DEPTH))])))
    assert ok.metadata["x"] == ((((),),),)
    long_ok = struct.pack("<IQ", ARRAY, 100) + struct.pack("<IQ", U8, 0) * 100  # skipped, kept as ArrayInfo
    assert read_gguf_header(_write(tmp_path / "long.gguf", _gguf([_kv("y", ARRAY, long_ok)]))).metadata["y"].length == 100
    with pytest.raises(GgufCorruptError, match="nested"):
        read_gguf_header(_write(tmp_path / "deep.gguf", _gguf([_kv("x", ARRAY, _nested(MAX_ARRAY_DEPTH + 1))])))
    deep_skipped = struct.pack("<IQ", ARRAY, 20) + _nested(MAX_ARRAY_DEPTH) * 20  # inside a long array too
    with pytest.raises(GgufCorruptError, match="nested"):
        read_gguf_header(_write(tmp_path / "deep2.gguf", _gguf([_kv("z", ARRAY, deep_skipped)])))


@pytest.mark.parametrize("data, needle", [
    (_gguf([], kv_count=2**63), "metadata entries"),
    (_gguf([], tensor_count=2**64 - 1), "tensors"),
    (_gguf([_kv("a", ARRAY, struct.pack("<IQ", U64, 2**61))]), "array items"),
    (_gguf([_kv("a", ARRAY, struct.pack("<IQ", STRING, 2**40))]), "array items"),
    (_gguf([_kv("a", ARRAY, struct.pack("<IQ", ARRAY, 2**50))]), "array items"),
    (_gguf([_kv("a", STRING, struct.pack("<Q", 2**62))]), "truncated or corrupt"),
    (_gguf([_kv("k" * 70_000, U8, b"\x01")]), "key of 70,000 bytes"),
    (_gguf([_kv("a", U8, b"\x01"), _kv("a", U8, b"\x02")]), "appears twice"),
    (_gguf([], [("t", [1, 1, 1, 1, 1], 0, 0)]), "5 dimensions"),
    (_gguf([_kv("a", ARRAY, struct.pack("<IQ", 77, 3))]), "unknown GGUF array item type 77"),
])
def test_defect13_lying_counts_are_refused_before_any_work(tmp_path: Path, data: bytes, needle: str) -> None:
    with pytest.raises(GgufError, match=needle):
        read_gguf_header(_write(tmp_path / "lie.gguf", data))


# ------------------------------------------------------------------ defect 14
@pytest.mark.parametrize("ttype, dims, nbytes", [
    (0, [8], 32), (1, [4, 2], 16), (2, [32, 2], 36), (3, [32], 20), (8, [64], 68),
    (12, [256], 144), (14, [512], 420),
])
def test_defect14_tensor_data_end_and_truncation(tmp_path: Path, ttype: int, dims: list[int], nbytes: int) -> None:
    tensors = [("a", [8], 0, 0), ("b", dims, ttype, 32)]  # F32 [8] = 32 bytes, then the tensor under test
    full = _gguf([_kv("general.architecture", STRING, _str("llama"))], tensors, b"\1" * (32 + nbytes))
    header = read_gguf_header(_write(tmp_path / "full.gguf", full))
    assert header.data_end == header.file_size == len(full) and header.data_offset == len(full) - 32 - nbytes
    with pytest.raises(GgufCorruptError, match=r"the file is truncated: tensor 'b' needs bytes up to "):
        read_gguf_header(_write(tmp_path / "cut.gguf", full[:-1]))


def test_defect14_alignment_offsets_and_unknown_types(tmp_path: Path) -> None:
    align64 = [_kv("general.alignment", U32, struct.pack("<I", 64))]
    header = read_gguf_header(_write(tmp_path / "a64.gguf", _gguf(align64, [("t", [16], 0, 0)], b"\0" * 64,
                                                                  alignment=64)))
    assert header.alignment == 64 and header.data_offset % 64 == 0 and header.data_end == header.data_offset + 64
    with pytest.raises(GgufCorruptError, match="not a multiple of 32"):
        read_gguf_header(_write(tmp_path / "mis.gguf", _gguf([], [("t", [1], 0, 4)], b"\0" * 64)))
    bad_align = [_kv("general.alignment", U32, struct.pack("<I", 24))]
    with pytest.raises(GgufCorruptError, match="power of two"):
        read_gguf_header(_write(tmp_path / "al.gguf", _gguf(bad_align, [("t", [1], 0, 0)], b"\0" * 64)))
    with pytest.raises(GgufCorruptError, match="whole number of 32-element blocks"):
        read_gguf_header(_write(tmp_path / "blk.gguf", _gguf([], [("t", [31], 2, 0)], b"\0" * 64)))
    # a type this reader does not know: only the start of its data is checked
    unknown = read_gguf_header(_write(tmp_path / "unk.gguf", _gguf([], [("t", [4], 99, 0)], b"\0" * 8)))
    assert unknown.data_end is None and unknown.tensor_types == {"type 99": 1}
    with pytest.raises(GgufCorruptError, match="starts at byte"):
        read_gguf_header(_write(tmp_path / "unk2.gguf", _gguf([], [("t", [4], 99, 64)], b"\0" * 8)))


def test_defect14_real_model_truncated_after_its_header(tmp_path: Path) -> None:
    smol = resolve("smollm2-135m")
    header = read_gguf_header(smol)
    assert header.data_end == header.file_size == smol.stat().st_size  # the packaged file is whole
    with open(smol, "rb") as fh:
        head = fh.read(header.data_offset + 4096)
    cut = _write(tmp_path / "models" / "cut.gguf", head)
    with pytest.raises(GgufCorruptError, match="cut.gguf: the file is truncated"):
        read_gguf_header(cut)
    with pytest.raises(BackendError, match="the file is truncated"):
        model_info(cut)  # reported, not passed to llama.cpp


@pytest.fixture()
def fake_gemma(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """A tiny stand-in for the Gemma chunk package, counting its assemblies."""
    content = _gguf([_kv("general.architecture", STRING, _str("gemma3"))], [("t", [8], 0, 0)], b"\7" * 32)
    pkg = types.SimpleNamespace(MODEL_NAME="fake-gemma.gguf", EXPECTED_SHA256=hashlib.sha256(content).hexdigest(),
                                content=content, assembled=0)

    def assemble(target: Path, overwrite: bool = False) -> None:
        pkg.assembled += 1
        Path(target).write_bytes(content)

    pkg.assemble = assemble
    real_import = runtime.registry._import
    monkeypatch.setattr(runtime.registry, "_import",
                        lambda name: pkg if name == runtime.registry._GEMMA3_PACKAGE else real_import(name))
    monkeypatch.setattr(runtime.model_cache, "_verified", {})
    return pkg


def _corrupt_same_size(path: Path) -> None:
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_defect14_same_size_corrupted_cached_model_is_reassembled(fake_gemma: types.SimpleNamespace) -> None:
    path = resolve("gemma3-270m")
    assert path.read_bytes() == fake_gemma.content and fake_gemma.assembled == 1
    assert resolve("gemma3-270m") == path and fake_gemma.assembled == 1  # reused
    _corrupt_same_size(path)
    assert resolve("gemma3-270m") == path and fake_gemma.assembled == 2
    assert path.read_bytes() == fake_gemma.content


def test_defect14_a_new_process_does_not_trust_the_digest_cache(fake_gemma: types.SimpleNamespace) -> None:
    path = resolve("gemma3-270m")
    _corrupt_same_size(path)
    # what a digest cache written before the corruption would say, with the current stamp
    runtime.model_cache.remember_sha256(path, fake_gemma.EXPECTED_SHA256)
    runtime.model_cache._verified.clear()  # a new process
    assert resolve("gemma3-270m") == path and fake_gemma.assembled == 2
    assert path.read_bytes() == fake_gemma.content


def test_defect14_corrupted_hub_blob_is_refused_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content = _gguf([_kv("general.architecture", STRING, _str("llama"))])
    hub = tmp_path / "hf" / "hub"
    blob_dir = hub / "models--someone--tiny" / "blobs"
    blob_dir.mkdir(parents=True)
    blob = _write(blob_dir / hashlib.sha256(content).hexdigest(), content)
    _fake_hub(hub, "someone/tiny", "tiny.gguf", blob)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert resolve("hf:someone/tiny:tiny.gguf").resolve() == blob
    _corrupt_same_size(blob)
    with pytest.raises(BackendError, match="corrupt"):
        resolve("hf:someone/tiny:tiny.gguf")


# ------------------------------------------------------------------ defect 15
SECRET = b"GGUF-looking secret: password=hunter2\n"


def _outside_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    return (_write(outside / "secret.gguf", SECRET), _write(outside / "model.gguf", _gguf([])),
            outside / "absent.gguf")


def _message(key: str) -> str:
    with pytest.raises(BackendError) as err:
        resolve(key)
    return str(err.value)


def test_defect15_outside_paths_get_one_error_that_reveals_nothing(tmp_path: Path, private_dirs: Path) -> None:
    secret, model, absent = _outside_files(tmp_path)
    messages = {p: _message(f"file:{p}") for p in (secret, model, absent)}
    for path, msg in messages.items():
        assert "may only name GGUF files inside the models folder" in msg and str(private_dirs) in msg
        assert "password" not in msg and "not found" not in msg and "no such" not in msg.lower()
    assert len({msg.replace(str(p), "P") for p, msg in messages.items()}) == 1  # the same words
    for escape in (f"{private_dirs}/../outside/model.gguf", f"{private_dirs}/../outside/absent.gguf"):
        assert "may only name" in _message(f"file:{escape}")
    link = private_dirs / "link.gguf"
    link.symlink_to(model)  # a link inside pointing outside
    assert "may only name" in _message(f"file:{link}")
    with pytest.raises(BackendError, match="may only name"):
        make_backend(f"file:{model}")  # the factory goes through the same check


def test_defect15_files_inside_show_no_bytes(tmp_path: Path, private_dirs: Path) -> None:
    junk = _write(private_dirs / "junk.gguf", b"JUNK" + SECRET)
    msg = _message(f"file:{junk}")
    assert "junk.gguf is not a GGUF model file" in msg and "JUNK" not in msg and "password" not in msg
    with pytest.raises(GgufError) as err:
        check_gguf_file(junk)
    assert "JUNK" not in str(err.value)
    (private_dirs / "sub").mkdir()
    good = _write(private_dirs / "sub" / "ok.gguf", _gguf([]))
    assert resolve(f"file:{good}") == good.resolve()
    assert "not found" in _message(f"file:{private_dirs / 'absent.gguf'}")  # inside, existence may be said


def test_defect15_registry_folders_are_allowed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    smol = resolve("smollm2-135m")
    assert resolve(f"file:{smol}") == smol.resolve()  # the packaged model's own folder
    cached = _write(runtime.model_cache.model_cache_dir() / "x.gguf", _gguf([]))
    assert resolve(f"file:{cached}") == cached.resolve()  # the model cache
    monkeypatch.delenv(MODELS_ENV)
    assert models_dir() == (ROOT / "models").resolve() and models_dir() in allowed_model_dirs()


def test_defect15_the_clinical_cli_refuses_an_outside_file(tmp_path: Path) -> None:
    secret, _, _ = _outside_files(tmp_path)
    env = {**os.environ, MODELS_ENV: str(tmp_path / "models")}
    out = subprocess.run([sys.executable, "-m", "dcem_clinical", "run", "--db", str(tmp_path / "x.duckdb"),
                          "--quiet", "--agents", f"file:{secret}"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 2 and "may only name GGUF files" in out.stderr
    assert "password" not in out.stderr and "Traceback" not in out.stderr


# ------------------------------------------------------------------ fuzz
_SCALAR_SIZE = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_EDGES = [0, 1, 2, 3, 16, 17, 31, 32, 255, 256, 4096, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1]
_u64 = st.integers(0, 40) | st.sampled_from(_EDGES)


def _payload(draw: Any, vtype: int, depth: int) -> bytes:
    if vtype in _SCALAR_SIZE:
        return draw(st.binary(min_size=_SCALAR_SIZE[vtype], max_size=_SCALAR_SIZE[vtype]))
    if vtype == STRING:
        raw = draw(st.binary(max_size=24))
        return struct.pack("<Q", len(raw)) + raw
    if vtype == ARRAY:
        item = draw(st.sampled_from([0, 4, 6, 7, 8, 9, 10, 12, 13, 99])) if depth < 6 else U8
        n = draw(st.integers(0, 3 if item == ARRAY else 20))
        if item not in _SCALAR_SIZE and item not in (STRING, ARRAY):
            return struct.pack("<IQ", item, n)
        return struct.pack("<IQ", item, n) + b"".join(_payload(draw, item, depth + 1) for _ in range(n))
    return b""  # an unknown value type


@st.composite
def crafted(draw: Any) -> bytes:
    """A GGUF built from random parts: key/values of every type, tensors of known and
    unknown types, then maybe a lying count, flipped bytes, a cut or an inserted u64."""
    kvs = []
    for i in range(draw(st.integers(0, 5))):
        vtype = draw(st.sampled_from([0, 4, 6, 7, 8, 9, 9, 9, 10, 12, 13, 200]))
        key = draw(st.sampled_from(["general.architecture", "general.alignment", "general.file_type",
                                    "llama.context_length", f"k{i}"]))
        kvs.append(_kv(key, vtype, _payload(draw, vtype, 0)))
    if draw(st.integers(0, 5)) == 0:
        kvs.append(_kv("deep", ARRAY, _nested(draw(st.sampled_from([3, 4, 5, 6, 50, 2000])))))
    tensors = [(draw(st.sampled_from(["t", "blk.0.w", ""])), draw(st.lists(_u64, max_size=5)),
                draw(st.sampled_from([0, 1, 2, 3, 8, 12, 14, 4, 99, 2**32 - 1])),
                draw(st.sampled_from([0, 32, 64, 1, 2**63]) | _u64))
               for _ in range(draw(st.integers(0, 3)))]
    data = draw(st.binary(max_size=64)) if draw(st.booleans()) else b"\0" * draw(st.integers(0, 2000))
    out = bytearray(_gguf(kvs, tensors, data,
                          kv_count=draw(st.none() | _u64), tensor_count=draw(st.none() | _u64)))
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["flip", "cut", "u64", "none"]))
        at = draw(st.integers(0, max(len(out) - 1, 0)))
        if op == "flip" and out:
            out[at] ^= draw(st.integers(1, 255))
        elif op == "cut":
            del out[at:]
        elif op == "u64":
            out[at:at + 8] = struct.pack("<Q", draw(st.sampled_from(_EDGES)))
    return bytes(out)


gguf_inputs = st.one_of(
    st.binary(max_size=256),                                   # anything
    st.binary(max_size=256).map(lambda b: b"GGUF" + b),        # the magic, then anything
    st.binary(max_size=64).map(lambda b: b"GGUF" + struct.pack("<I", 3) + b),
    crafted(), crafted(), crafted(),
)


def _checker(path: Path) -> Any:
    def check(data: bytes) -> str:
        path.write_bytes(data)
        try:
            header = read_gguf_header(path)
        except GgufError as exc:
            assert str(exc) and "\n" not in str(exc)
            return "error"
        assert isinstance(header, GgufHeader) and header.file_size == len(data)
        assert header.data_end is None or header.data_offset <= header.data_end <= header.file_size
        check_gguf_file(path)
        return "valid"
    return check


def test_fuzz_gguf_header_reader(tmp_path: Path) -> None:
    counts = run_budget("gguf header", gguf_inputs, _checker(tmp_path / "fuzz.gguf"), DEFAULT)
    assert counts["error"] and counts["valid"]


@pytest.mark.fuzz_large
def test_fuzz_gguf_header_reader_large(tmp_path: Path) -> None:
    counts = run_budget("gguf header (large)", gguf_inputs, _checker(tmp_path / "fuzz.gguf"), LARGE)
    assert counts["inputs"] >= 10_000 and counts["error"] and counts["valid"]
