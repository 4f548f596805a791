"""Exact search in memory: a hot partition's vectors held in matrices and scanned.

- `partitions`: `ExactPartitions`, the hot partitions of an embedded store, bounded in bytes
  (float32 rows, float16 past the float32 bound, each beside an int8 copy scanned for
  candidates), loaded in the background, and one set of them per folder in a process
  (`shared_partitions`);
- `matrix`: one partition's rows (`Matrix`), the shape a partition is read in (`Loaded`), and
  the kernels that scan them (float32, int8 candidates, top k).
- `snapshots`: held partitions saved beside the store, so a restart searches exactly at once.

Imports nothing of recall (numpy and the process's exit hook only): an engine holds it.
"""

from .matrix import Loaded
from .partitions import EXACT_LIMIT, EXACT_MIN, ExactPartitions, shared_partitions

__all__ = ["EXACT_LIMIT", "EXACT_MIN", "ExactPartitions", "Loaded", "shared_partitions"]
