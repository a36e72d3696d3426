"""The project's bottom layer: the user-facing error types and the DuckDB plumbing
(opening a store file, per-package named migrations, cursors and retried transactions),
the strict reading of a user's JSON and the escaping of text printed on a terminal,
that the mediator library, the model runtime and the experiments share.  It imports no
other package of the project."""
