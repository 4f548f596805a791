"""Working memory, the agent's notepad: options, update rules, prompt, store and tool.

- `config`: `WorkingMemoryConfig` (Markdown template or schema, scope, limits), `TOOL_NAME`,
  what an update does (replace, or RFC 7396 merge patch and validation) and the system message
  that shows the memory to the model.
- `service`: `WorkingMemoryStore`, reading and updating it in storage (composed by `Memory`).
- `tool`: the ``update_working_memory`` `StructuredTool`.
"""

from .config import (
    DEFAULT_TEMPLATE,
    TOOL_NAME,
    WorkingMemoryConfig,
    apply_update,
    load_data,
    merge_patch,
)
from .service import WorkingMemoryStore

__all__ = [
    "DEFAULT_TEMPLATE",
    "TOOL_NAME",
    "WorkingMemoryConfig",
    "WorkingMemoryStore",
    "apply_update",
    "load_data",
    "merge_patch",
]
