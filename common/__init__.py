"""The project's bottom layer: the user-facing error types and the DuckDB plumbing
(opening a store file, per-package named migrations, cursors and retried transactions)
that the mediator library, the model runtime and the experiments share.  It imports no
other package of the project."""
