"""`SQLiteStorage`, the embedded default (one file, WAL, no server): `backend`, and `schema`
(its migrations). Imports `storage.sql` and the front."""

from .backend import SQLiteStorage

__all__ = ["SQLiteStorage"]
