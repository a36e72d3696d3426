"""Checkpoints that survive kill -9: adapters, optimiser, step and random state in one folder.

A checkpoint is written into a fresh folder beside the live one and swapped in by renames,
so at any moment the run folder holds one complete checkpoint (the new one or the old
one), never a half-written mix.  ``meta.json`` is written last inside the new folder; a
folder without it is an interrupted write and is ignored.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.errors import InputError

__all__ = ["Checkpoint", "save_checkpoint", "load_checkpoint", "restore", "CHECKPOINT_DIR"]

CHECKPOINT_DIR = "checkpoint"
_META = "meta.json"


@dataclass(frozen=True)
class Checkpoint:
    """What a resumed run needs: the step done, the extra state the experiment saved, and
    the paths of the adapter weights and the optimiser state."""

    step: int
    state: dict[str, Any]
    adapter: Path
    optimizer: Path


def _adapter_file(folder: Path, name: str) -> Path:
    return folder / ("adapter.safetensors" if name == "default" else f"adapter-{name}.safetensors")


def save_checkpoint(run_dir: Path, step: int, model: Any, optimizer: Any, state: dict[str, Any],
                    extra: dict[str, Any] | None = None) -> Path:
    """Write the checkpoint of ``step`` (the weights of every peft adapter, optimiser, JSON
    ``state``, and ``extra`` torch state such as a critic and its optimiser)."""
    import torch
    from peft import get_peft_model_state_dict
    from safetensors.torch import save_file

    run_dir.mkdir(parents=True, exist_ok=True)
    live, fresh, old = (run_dir / CHECKPOINT_DIR, run_dir / (CHECKPOINT_DIR + ".new"),
                        run_dir / (CHECKPOINT_DIR + ".old"))
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir()
    for name in model.peft_config:
        weights = {k: v.detach().contiguous()
                   for k, v in get_peft_model_state_dict(model, adapter_name=name).items()}
        save_file(weights, str(_adapter_file(fresh, name)))
    torch.save(optimizer.state_dict(), fresh / "optimizer.pt")
    if extra is not None:
        torch.save(extra, fresh / "extra.pt")
    (fresh / _META).write_text(json.dumps({"step": step, "state": state}), encoding="utf-8")
    _fsync_dir(fresh)
    shutil.rmtree(old, ignore_errors=True)
    if live.exists():
        os.replace(live, old)
    os.replace(fresh, live)
    shutil.rmtree(old, ignore_errors=True)
    return live


def load_checkpoint(run_dir: Path) -> Checkpoint | None:
    """The run's last complete checkpoint, or None when it has none yet."""
    for folder in (run_dir / CHECKPOINT_DIR, run_dir / (CHECKPOINT_DIR + ".old")):
        meta = folder / _META
        if meta.is_file():
            try:
                data = json.loads(meta.read_text(encoding="utf-8"))
                step, state = int(data["step"]), dict(data["state"])
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError("checkpoint", f"the checkpoint in {folder.name} is damaged ({exc}); delete the folder "
                                 "to start the run again") from None
            return Checkpoint(step, state, folder / "adapter.safetensors", folder / "optimizer.pt")
    return None


def restore(checkpoint: Checkpoint, model: Any, optimizer: Any) -> dict[str, Any] | None:
    """Load a checkpoint's adapter weights and optimiser state into the live objects;
    returns the ``extra`` state saved with it (None when there was none)."""
    import torch
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    try:
        for name in model.peft_config:
            set_peft_model_state_dict(model, load_file(str(_adapter_file(checkpoint.adapter.parent, name))),
                                      adapter_name=name)
        optimizer.load_state_dict(torch.load(checkpoint.optimizer, map_location="cpu", weights_only=True))
        extra = checkpoint.adapter.parent / "extra.pt"
        return torch.load(extra, map_location="cpu", weights_only=True) if extra.is_file() else None
    except (OSError, RuntimeError, ValueError, KeyError) as exc:
        raise InputError("checkpoint", f"cannot load the checkpoint {checkpoint.adapter.parent.name}: {exc}") from None


def _fsync_dir(folder: Path) -> None:
    for path in folder.iterdir():
        with open(path, "rb") as fh:
            os.fsync(fh.fileno())
