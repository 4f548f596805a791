"""Memory on a Mastra store's own tables (`MastraStorage`, in `sync`: the algorithms once;
`sqlite` and `postgres` the engines'): `content` reads and writes Mastra's message rows, `layout`
its tables, times and JSONB, `migration` copies a store in or out."""

from .postgres import MastraPostgresStorage
from .sqlite import MastraSQLiteStorage
from .sync import MastraStorage

__all__ = ["MastraPostgresStorage", "MastraSQLiteStorage", "MastraStorage"]
