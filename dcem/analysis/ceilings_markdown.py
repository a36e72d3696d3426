"""The synthetic world's accuracy ceilings (:mod:`dcem.synthetic.ceilings`) as a markdown table.

One row per scenario: the best decision's accuracy (and R_L) given one round of both
agents' reports at the specification's sharpness (1) and the sharpened variant (3), given
the agents' MAP labels, and given their full distributions.  Measured on ``n`` fresh cases
per scenario with held-out (cross-fitted) decision tables; the same ``seed`` gives the same
numbers.
"""
from __future__ import annotations

import numpy as np

from dcem.synthetic.ceilings import accuracy_ceilings

__all__ = ["ceilings_markdown", "SCENARIOS"]

SCENARIOS = ("S1", "S2", "S3a", "S3b")


def ceilings_markdown(*, n: int = 200_000, seed: int = 0) -> str:
    """Accuracy / R_L ceilings of the four scenarios; about 1 s per scenario and sharpness."""
    lines = [f"Ceilings measured on {n:,} generated cases per scenario (seed {seed}), accuracy / R_L:", "",
             "| scen. | one round, sharpness 1 | one round, sharpness 3 | MAP labels | full distributions |",
             "|---|---|---|---|---|"]
    for scen in SCENARIOS:
        seed_world = accuracy_ceilings(scen, n=n, rng=np.random.default_rng(seed), sharpness=1.0)
        sharp = accuracy_ceilings(scen, n=n, rng=np.random.default_rng(seed), sharpness=3.0)
        cols = [f"{seed_world.one_round:.2f} / {seed_world.one_round_risk:.2f}",
                f"{sharp.one_round:.2f} / {sharp.one_round_risk:.2f}",
                f"{seed_world.map_pair:.2f} / {seed_world.map_pair_risk:.2f}",
                f"{seed_world.posteriors:.2f} / {seed_world.posteriors_risk:.2f}"]
        lines.append(f"| {scen} | " + " | ".join(cols) + " |")
    return "\n".join(lines) + "\n"
