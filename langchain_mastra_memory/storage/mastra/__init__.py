"""Memory on a Mastra store's own tables (see `sqlite`): `content` reads and writes Mastra's
message rows, `layout` its tables, times and JSONB."""

from .sqlite import MastraStorage

__all__ = ["MastraStorage"]
