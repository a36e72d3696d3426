"""A trained group's adapters, made portable for an export.

A group run ends with a group file whose agents name their adapters by path inside the
run's folder (``<base>+lora:file:<path>``): it plays only on the machine that trained it.
The export copies each adapter it names into the adapters folder as ``<export>-<adapter>``
(``adapter-judge.gguf`` of export ``sag6-ctde`` becomes ``sag6-ctde-judge.gguf``) and
rewrites every such key to the registry's ``<base>+lora:<export>-<adapter>``, which
resolves wherever the adapters folder is shipped.  The group file is JSON of any shape;
only strings holding ``+lora:file:`` change (and a top-level ``name``, set to the
export's name).
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from common.errors import InputError
from common.table_export import file_sha256

__all__ = ["GROUP_FILE", "LORA_FILE", "portable_group", "file_entry", "copy_atomically"]

GROUP_FILE = "group.json"
LORA_FILE = "+lora:file:"


def file_entry(name: str, path: Path) -> dict[str, Any]:
    """The manifest entry of an adapter file: name, file, size and sha256."""
    return {"name": name, "file": path.name, "size_bytes": path.stat().st_size, "sha256": file_sha256(path)}


def copy_atomically(source: Path, target: Path) -> None:
    """Copy through a partial file, so a crash never leaves half a target."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.partial")
    shutil.copyfile(source, tmp)
    os.replace(tmp, target)


def portable_group(source: Path, name: str, adapters: Path) -> tuple[Any, list[dict[str, Any]]]:
    """The group file ``source`` with its adapters copied to ``adapters`` and named by
    registry key (see the module docstring), and the adapters' manifest entries."""
    try:
        data = json.loads(Path(source).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError("run", f"the group file {source} is not readable JSON ({exc})") from None
    copied: dict[Path, dict[str, Any]] = {}

    def portable(key: str) -> str:
        base, file = key.split(LORA_FILE, 1)
        path = Path(file)
        if path not in copied:
            if not path.is_file():
                raise InputError("run", f"the group file names an adapter that is missing: {path}")
            stem = path.stem.removeprefix("adapter-") or "adapter"
            target = Path(adapters) / f"{name}-{stem}.gguf"
            if any(entry["name"] == target.stem for entry in copied.values()):
                raise InputError("run", f"the group file names two adapters called {path.name}")
            copy_atomically(path, target)
            copied[path] = file_entry(target.stem, target)
        return f"{base}+lora:{copied[path]['name']}"

    def rewrite(value: Any) -> Any:
        if isinstance(value, str) and LORA_FILE in value:
            return portable(value)
        if isinstance(value, list):
            return [rewrite(v) for v in value]
        if isinstance(value, dict):
            return {k: rewrite(v) for k, v in value.items()}
        return value

    Path(adapters).mkdir(parents=True, exist_ok=True)
    out = rewrite(data)
    if not copied:
        raise InputError("run", f"the group file {source} names no trained adapter")
    if isinstance(out, dict) and "name" in out:
        out["name"] = name
    return out, list(copied.values())
