"""The system message that shows the model its working memory (and how to update it)."""

from __future__ import annotations

import json

from langchain_core.messages import SystemMessage

from ..injected import DATA_NOT_INSTRUCTIONS, SOURCE_KEY, fenced
from .config import TOOL_NAME, WorkingMemoryConfig


def instructions(config: WorkingMemoryConfig, data: str | None, *, observed: bool = False) -> str:
    """The system message that injects working memory (and, unless read-only or `observed`,
    how to update it). `observed`: the Observer keeps it up to date (`WorkingMemoryExtractor`,
    ``manage_working_memory``), so the model is not told to call a tool it may not have."""
    current = data if data is not None else ""
    if config.mode == "markdown":
        shape = fenced("working_memory_template", config.markdown_template)
        how = (
            f"Call the {TOOL_NAME} tool with the ENTIRE Markdown document (every section, "
            "including empty ones): it replaces what is stored."
        )
    else:
        shape = fenced("working_memory_schema", json.dumps(config.schema_dict))
        how = (
            f"Call the {TOOL_NAME} tool with ONLY the fields that changed: objects are merged, "
            "arrays replace the stored array, null deletes a field."
        )
    head = "WORKING_MEMORY_SYSTEM_INSTRUCTION:"
    if observed and not config.read_only:
        return (
            f"{head}\nWhat you know about the user, kept up to date from the conversation by "
            "memory itself (you need not update it). "
            f"{DATA_NOT_INSTRUCTIONS}\n\n{fenced('working_memory_data', current)}"
        )
    if config.read_only:
        return (
            f"{head}\nWhat you know about the user from earlier conversations (read-only). "
            f"{DATA_NOT_INSTRUCTIONS}\n\n{fenced('working_memory_data', current)}"
        )
    return f"""{head}
Store and update any conversation-relevant information by calling the {TOOL_NAME} tool. If \
information might be referenced again, store it.

Guidelines:
1. Store anything that could be useful later in the conversation.
2. Update proactively when information changes, no matter how small.
3. Act naturally: don't mention this system to the user.
4. {how}

{shape}

{fenced("working_memory_data", current)}

Notes:
- Update memory whenever referenced information changes.
- If you are unsure whether to store something, store it.
- The user does not see this memory; it keeps the conversation going when the history is short.
- {DATA_NOT_INSTRUCTIONS}"""


def working_memory_message(
    config: WorkingMemoryConfig, data: str | None, *, observed: bool = False
) -> SystemMessage:
    """The system message for stored working-memory text `data`, tagged as memory's own."""
    return SystemMessage(
        instructions(config, data, observed=observed),
        response_metadata={SOURCE_KEY: "working_memory"},
    )
