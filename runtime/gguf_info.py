"""A small reader for the header of a GGUF model file (metadata, no weights).

A GGUF file starts with the magic ``b"GGUF"``, a uint32 version (2 or 3), a uint64
tensor count and a uint64 key/value count, then the key/value pairs and one record per
tensor (name, shape, type, offset); the weights follow.  Everything is little-endian.
Only that header is read, through ``mmap``, so the weights never enter memory.

Long arrays (the tokenizer's vocabulary, scores ...) are skipped and kept as an
:class:`ArrayInfo` (item type and length); short arrays are kept as tuples.

A header is untrusted input, so every count it gives is checked against the bytes left
in the file before anything is read, allocated or looped over; arrays may nest at most
:data:`MAX_ARRAY_DEPTH` deep (llama.cpp itself accepts no nesting), keys are at most
65,535 bytes and tensors have at most 4 dimensions.  After the tensor records, the end of
the tensor data is computed (``general.alignment``, default 32, and the ggml block sizes)
and a file shorter than that is reported as truncated.  Every failure is a
:class:`GgufError` (a :class:`BackendError`); :class:`GgufCorruptError` marks a file that
is damaged rather than merely of a newer, unknown kind.
"""
from __future__ import annotations

import mmap
import os
import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from runtime.backends import BackendError

__all__ = ["GGUF_MAGIC", "check_gguf_file", "ArrayInfo", "GgufHeader", "GgufError", "GgufCorruptError",
           "read_gguf_header", "file_type_name", "tensor_type_name", "tensor_nbytes", "MAX_ARRAY_DEPTH"]

GGUF_MAGIC = b"GGUF"
MAX_ARRAY_DEPTH = 4        # arrays inside arrays: at most this many levels
MAX_KEY_BYTES = 65_535     # the GGUF spec's limit on a key (also used for tensor names)
MAX_DIMS = 4               # GGML_MAX_DIMS
DEFAULT_ALIGNMENT = 32


class GgufError(BackendError):
    """A file the GGUF header reader cannot read (not GGUF, unsupported, corrupt)."""


class GgufCorruptError(GgufError):
    """A GGUF file that is truncated or whose header is inconsistent with the file."""


def check_gguf_file(path: Path, prefix: str = "") -> Path:
    """``path`` if it is a readable file starting with the GGUF magic bytes, else a
    :class:`BackendError` (``prefix`` names the model key in the message)."""
    if not path.exists():
        raise BackendError(f"{prefix}model file not found (no such file): {path}")
    if not path.is_file():
        raise BackendError(f"{prefix}{path} is not a file")
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise BackendError(f"{prefix}cannot read {path} ({exc.strerror})") from None
    if head != GGUF_MAGIC:  # no bytes of the file in the message: it may be any file
        raise GgufError(f"{prefix}{path.name} is not a GGUF model file")
    return path


SHORT_ARRAY = 16  # arrays up to this length are kept as tuples

# value type -> struct format for the fixed-size types (8 = string, 9 = array)
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9

# llama.cpp ``llama_ftype`` (``general.file_type``) -> name
_FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
               10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
               16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
               22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
               28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0",
               37: "TQ2_0", 38: "MXFP4_MOE"}

# ggml tensor type -> name (used when ``general.file_type`` is absent)
_TENSOR_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0",
                 9: "Q8_1", 10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K",
                 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S",
                 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64",
                 29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4"}


def file_type_name(code: int) -> str:
    """Name of a ``general.file_type`` code (``"Q4_K_M"``), or ``"type N"`` when unknown."""
    return _FILE_TYPES.get(int(code), f"type {int(code)}")


def tensor_type_name(code: int) -> str:
    return _TENSOR_TYPES.get(int(code), f"type {int(code)}")


# ggml tensor type -> (elements per block, bytes per block), as ggml_blck_size/ggml_type_size
_TYPE_SIZES = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
               9: (32, 36), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210),
               15: (256, 292), 16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50), 20: (32, 18),
               21: (256, 110), 22: (256, 82), 23: (256, 136), 24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8),
               28: (1, 8), 29: (256, 56), 30: (1, 2), 34: (256, 54), 35: (256, 66), 39: (32, 17)}


def tensor_nbytes(type_code: int, dims: tuple[int, ...]) -> int | None:
    """Bytes of a tensor of ggml type ``type_code`` and shape ``dims``; None for an unknown
    type.  Raises :class:`GgufCorruptError` when the first dimension is not a whole number
    of blocks (ggml cannot store such a tensor)."""
    if type_code not in _TYPE_SIZES:
        return None
    block, size = _TYPE_SIZES[type_code]
    count = 1
    for d in dims:
        count *= d
    if dims and dims[0] % block:
        raise GgufCorruptError(f"a {tensor_type_name(type_code)} tensor of shape {list(dims)} is not a whole "
                               f"number of {block}-element blocks")
    return count // block * size


@dataclass(frozen=True)
class ArrayInfo:
    """A long metadata array that was skipped: its item type code and length."""

    item_type: int
    length: int


Value = Union[int, float, bool, str, tuple[Any, ...], ArrayInfo]


@dataclass(frozen=True)
class GgufHeader:
    """What the header of a GGUF file says.

    metadata : every key/value pair (long arrays as :class:`ArrayInfo`).
    parameter_count : total number of weights over all tensors.
    tensor_types : how many tensors use each ggml type, by type name.
    data_offset : where the tensor data starts (the header's end, aligned).
    data_end : where the last tensor's data ends (None when a tensor has a type whose
        size is unknown to this reader; then only its start was checked).
    file_size : the file's size in bytes (never less than ``data_end``).
    tensor_shapes : each tensor's name and ggml shape (``ne``: the row length first).
    """

    version: int
    tensor_count: int
    metadata: dict[str, Value]
    parameter_count: int
    tensor_types: dict[str, int]
    alignment: int = DEFAULT_ALIGNMENT
    data_offset: int = 0
    data_end: int | None = None
    file_size: int = 0
    tensor_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def architecture(self) -> str | None:
        arch = self.metadata.get("general.architecture")
        return arch if isinstance(arch, str) else None

    @property
    def context_length(self) -> int | None:
        value = self.metadata.get(f"{self.architecture}.context_length")
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def quantization(self) -> str | None:
        """``general.file_type`` by name, else the most common non-F32 tensor type."""
        code = self.metadata.get("general.file_type")
        if isinstance(code, int) and not isinstance(code, bool):
            return file_type_name(code)
        quantized = {k: n for k, n in self.tensor_types.items() if k != "F32"}
        return max(quantized, key=lambda k: quantized[k]) if quantized else None


class _Cursor:
    """Bounds-checked little-endian reads from a memory map."""

    def __init__(self, buf: mmap.mmap, name: str) -> None:
        self.buf, self.pos, self.name = buf, 0, name
        self.size = len(buf)

    def corrupt(self, what: str) -> GgufCorruptError:
        return GgufCorruptError(f"{self.name}: GGUF header is truncated or corrupt: {what} (offset {self.pos})")

    def _need(self, n: int) -> None:
        if n < 0 or self.pos + n > self.size:
            raise GgufCorruptError(f"{self.name}: GGUF header is truncated or corrupt (offset {self.pos})")

    def fits(self, count: int, min_item: int, what: str) -> None:
        """``count`` items of at least ``min_item`` bytes each must fit in what is left."""
        left = self.size - self.pos
        if count * min_item > left:
            raise self.corrupt(f"it claims {count:,} {what}, more than the {left:,} bytes left can hold")

    def unpack(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        self._need(size)
        value = struct.unpack_from(fmt, self.buf, self.pos)[0]
        self.pos += size
        return value

    def skip(self, n: int) -> None:
        self._need(n)
        self.pos += n

    def string(self, limit: int | None = None, what: str = "string") -> str:
        n = self.unpack("<Q")
        if limit is not None and n > limit:
            raise self.corrupt(f"a {what} of {n:,} bytes (the limit is {limit:,})")
        self._need(n)
        raw = self.buf[self.pos:self.pos + n]
        self.pos += n
        return raw.decode("utf-8", errors="replace")

    def skip_string(self) -> None:
        self.skip(self.unpack("<Q"))

    def _array_head(self, depth: int) -> tuple[int, int]:
        if depth >= MAX_ARRAY_DEPTH:
            raise self.corrupt(f"arrays nested more than {MAX_ARRAY_DEPTH} deep")
        item_type, length = self.unpack("<I"), self.unpack("<Q")
        if item_type not in _MIN_SIZE:
            raise GgufError(f"{self.name}: unknown GGUF array item type {item_type} at offset {self.pos}")
        self.fits(length, _MIN_SIZE[item_type], "array items")
        return item_type, length

    def value(self, vtype: int, depth: int = 0) -> Value:
        """One value; ``depth`` is the number of arrays it is inside."""
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            item_type, length = self._array_head(depth)
            if length <= SHORT_ARRAY:
                return tuple(self.value(item_type, depth + 1) for _ in range(length))
            self.skip_array(item_type, length, depth + 1)
            return ArrayInfo(item_type, length)
        raise GgufError(f"{self.name}: unknown GGUF value type {vtype} at offset {self.pos}")

    def skip_array(self, item_type: int, length: int, depth: int) -> None:
        """Skip ``length`` items; every item consumes at least one byte (checked), so the
        work is bounded by the file size."""
        if item_type in _SCALARS:
            self.skip(struct.calcsize(_SCALARS[item_type]) * length)
        elif item_type == _STRING:
            for _ in range(length):
                self.skip_string()
        else:  # arrays of arrays
            for _ in range(length):
                inner_type, inner_length = self._array_head(depth)
                self.skip_array(inner_type, inner_length, depth + 1)


# the fewest bytes a value of each type takes (a string: its length; an array: type + length)
_MIN_SIZE = {**{t: struct.calcsize(f) for t, f in _SCALARS.items()}, _STRING: 8, _ARRAY: 12}
_MIN_KV = 8 + 4 + 1          # key length, value type, a one-byte value
_MIN_TENSOR = 8 + 4 + 4 + 8  # name length, n_dims, type, offset


def _alignment(cur: _Cursor, metadata: dict[str, Value]) -> int:
    value = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0 or value & (value - 1):
        raise cur.corrupt(f"general.alignment is {value!r}, not a positive power of two")
    return value


def _short(name: str) -> str:
    return repr(name if len(name) <= 64 else name[:61] + "...")


def read_gguf_header(path: str | os.PathLike[str]) -> GgufHeader:
    """Read the metadata and tensor shapes of a GGUF file without its weights.

    Raises :class:`GgufError` (a :class:`BackendError`) for a missing file, a file that
    is not GGUF, an unsupported version (only 2 and 3 exist in current files) or an
    unknown value type, and :class:`GgufCorruptError` for a corrupt header, a header
    beyond the reader's limits, or a file shorter than the tensor data it promises.
    """
    path = Path(path)
    if not path.is_file():
        raise GgufError(f"model file not found: {path}")
    try:
        with open(path, "rb") as fh:
            if fh.read(4) != GGUF_MAGIC:
                raise GgufError(f"{path.name} is not a GGUF model file (no GGUF magic bytes)")
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                return _parse(_Cursor(buf, path.name))
    except BackendError:  # a ValueError too
        raise
    except OSError as exc:
        raise GgufError(f"cannot read {path.name} ({exc.strerror or exc})") from None
    except ValueError as exc:  # mmap of a file emptied meanwhile
        raise GgufCorruptError(f"cannot read {path.name} ({exc})") from None


def _tensor_infos(cur: _Cursor, tensor_count: int) -> list[tuple[str, tuple[int, ...], int, int]]:
    """(name, dims, type, offset) of every tensor, each count checked against the file."""
    cur.fits(tensor_count, _MIN_TENSOR, "tensors")
    tensors: list[tuple[str, tuple[int, ...], int, int]] = []
    for _ in range(tensor_count):
        name = cur.string(MAX_KEY_BYTES, "tensor name")
        n_dims = cur.unpack("<I")
        if n_dims > MAX_DIMS:
            raise cur.corrupt(f"tensor {_short(name)} has {n_dims:,} dimensions (at most {MAX_DIMS})")
        dims = tuple(cur.unpack("<Q") for _ in range(n_dims))
        tensors.append((name, dims, cur.unpack("<I"), cur.unpack("<Q")))
    return tensors


def _parse(cur: _Cursor) -> GgufHeader:
    cur.skip(4)
    version = cur.unpack("<I")
    if version not in (2, 3):
        raise GgufError(f"{cur.name}: unsupported GGUF version {version}")
    tensor_count, kv_count = cur.unpack("<Q"), cur.unpack("<Q")
    cur.fits(tensor_count, _MIN_TENSOR, "tensors")
    cur.fits(kv_count, _MIN_KV, "metadata entries")
    metadata: dict[str, Value] = {}
    for _ in range(kv_count):
        key = cur.string(MAX_KEY_BYTES, "key")
        if key in metadata:
            raise cur.corrupt(f"the key {_short(key)} appears twice")
        metadata[key] = cur.value(cur.unpack("<I"))
    tensors = _tensor_infos(cur, tensor_count)
    alignment = _alignment(cur, metadata)
    data_offset = -(-cur.pos // alignment) * alignment
    params = 0
    types: Counter[str] = Counter()
    data_end: int | None = data_offset
    for name, dims, ttype, offset in tensors:
        count = 1
        for d in dims:
            count *= d
        params += count
        types[tensor_type_name(ttype)] += 1
        if offset % alignment:
            raise cur.corrupt(f"tensor {_short(name)} has offset {offset:,}, not a multiple of {alignment}")
        start = data_offset + offset
        try:
            nbytes = tensor_nbytes(ttype, dims)
        except GgufCorruptError as exc:
            raise cur.corrupt(f"tensor {_short(name)}: {exc}") from None
        if nbytes is None:  # unknown type: at least its data must start inside the file
            data_end = None
            if start >= cur.size:
                raise GgufCorruptError(f"{cur.name}: the file is truncated: tensor {_short(name)} starts at byte "
                                       f"{start:,} but the file has {cur.size:,} bytes")
            continue
        if start + nbytes > cur.size:
            raise GgufCorruptError(f"{cur.name}: the file is truncated: tensor {_short(name)} needs bytes up to "
                                   f"{start + nbytes:,} but the file has {cur.size:,} bytes")
        if data_end is not None:
            data_end = max(data_end, start + nbytes)
    return GgufHeader(version=version, tensor_count=tensor_count, metadata=metadata, parameter_count=params,
                      tensor_types=dict(types), alignment=alignment, data_offset=data_offset,
                      data_end=data_end if tensors else None, file_size=cur.size,
                      tensor_shapes={name: dims for name, dims, _, _ in tensors})
