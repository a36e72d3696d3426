"""Training of the project's small language models: LoRA adapters on the packaged GGUF bases.

Generic parts only (no experiment is imported here): the option-letter policy and its
log-probabilities (:mod:`training.letters`), the GRPO and CTDE objectives of the SAG seed
(:mod:`training.grpo`, :mod:`training.ctde`), adapters and their GGUF export
(:mod:`training.lora`, :mod:`training.gguf_lora`), checkpoints and the resumable loop
(:mod:`training.checkpoint`, :mod:`training.loop`) and the training record in the store
(:mod:`training.store`).  The experiments build their rollouts and rewards on top:
``sag.training`` for agent groups and ``dcem_clinical.diagnostician`` for D-CEM's
clinical agents.  torch, transformers and peft come from ``requirements-train.txt``.
"""
