"""A small reader for the header of a GGUF model file (metadata, no weights).

A GGUF file starts with the magic ``b"GGUF"``, a uint32 version (2 or 3), a uint64
tensor count and a uint64 key/value count, then the key/value pairs and one record per
tensor (name, shape, type, offset); the weights follow.  Everything is little-endian.
Only that header is read, through ``mmap``, so the weights never enter memory.

Long arrays (the tokenizer's vocabulary, scores ...) are skipped and kept as an
:class:`ArrayInfo` (item type and length); short arrays are kept as tuples.
"""
from __future__ import annotations

import mmap
import os
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from runtime.backends import BackendError

__all__ = ["GGUF_MAGIC", "check_gguf_file", "ArrayInfo", "GgufHeader", "read_gguf_header", "file_type_name",
           "tensor_type_name"]

GGUF_MAGIC = b"GGUF"


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
    if head != GGUF_MAGIC:
        raise BackendError(f"{prefix}{path.name} is not a GGUF model file (it starts with {head!r}, not b'GGUF')")
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
    """

    version: int
    tensor_count: int
    metadata: dict[str, Value]
    parameter_count: int
    tensor_types: dict[str, int]

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

    def _need(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.buf):
            raise BackendError(f"{self.name}: GGUF header is truncated or corrupt (offset {self.pos})")

    def unpack(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        self._need(size)
        value = struct.unpack_from(fmt, self.buf, self.pos)[0]
        self.pos += size
        return value

    def skip(self, n: int) -> None:
        self._need(n)
        self.pos += n

    def string(self) -> str:
        n = self.unpack("<Q")
        self._need(n)
        raw = self.buf[self.pos:self.pos + n]
        self.pos += n
        return raw.decode("utf-8", errors="replace")

    def skip_string(self) -> None:
        self.skip(self.unpack("<Q"))

    def value(self, vtype: int) -> Value:
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            item_type, length = self.unpack("<I"), self.unpack("<Q")
            if length <= SHORT_ARRAY:
                return tuple(self.value(item_type) for _ in range(length))
            self.skip_array(item_type, length)
            return ArrayInfo(item_type, length)
        raise BackendError(f"{self.name}: unknown GGUF value type {vtype} at offset {self.pos}")

    def skip_array(self, item_type: int, length: int) -> None:
        if item_type in _SCALARS:
            self.skip(struct.calcsize(_SCALARS[item_type]) * length)
        elif item_type == _STRING:
            for _ in range(length):
                self.skip_string()
        else:
            for _ in range(length):
                self.value(item_type)


def read_gguf_header(path: str | os.PathLike[str]) -> GgufHeader:
    """Read the metadata and tensor shapes of a GGUF file without its weights.

    Raises :class:`BackendError` for a missing file, a file that is not GGUF, an
    unsupported version (only 2 and 3 exist in current files) or a corrupt header.
    """
    path = Path(path)
    if not path.is_file():
        raise BackendError(f"model file not found: {path}")
    with open(path, "rb") as fh:
        if fh.read(4) != GGUF_MAGIC:
            raise BackendError(f"{path.name} is not a GGUF model file (no GGUF magic bytes)")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            cur = _Cursor(buf, path.name)
            cur.skip(4)
            version = cur.unpack("<I")
            if version not in (2, 3):
                raise BackendError(f"{path.name}: unsupported GGUF version {version}")
            tensor_count, kv_count = cur.unpack("<Q"), cur.unpack("<Q")
            metadata: dict[str, Value] = {}
            for _ in range(kv_count):
                key = cur.string()
                metadata[key] = cur.value(cur.unpack("<I"))
            params = 0
            types: Counter[str] = Counter()
            for _ in range(tensor_count):
                cur.skip_string()
                n_dims = cur.unpack("<I")
                count = 1
                for _ in range(n_dims):
                    count *= cur.unpack("<Q")
                types[tensor_type_name(cur.unpack("<I"))] += 1
                cur.skip(8)  # data offset
                params += count
    return GgufHeader(version=version, tensor_count=tensor_count, metadata=metadata,
                      parameter_count=params, tensor_types=dict(types))
