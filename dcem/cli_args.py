"""The project's argument parsing now lives in :mod:`common.cli_args` (every command line
uses it); this name stays for code that imported it from here."""
from common.cli_args import (EXIT_USAGE, MAX_SAMPLES, MAX_SCALE, MAX_SEED, MAX_SEEDS, Parser, float_in, int_in,
                             one_line)

__all__ = ["Parser", "EXIT_USAGE", "one_line", "int_in", "float_in", "MAX_SEEDS", "MAX_SEED", "MAX_SAMPLES",
           "MAX_SCALE"]
