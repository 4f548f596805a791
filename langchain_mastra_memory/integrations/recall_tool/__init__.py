"""The ``search_memory`` tool (`Memory.recall_tool`) and its parts.

- `tool`: the StructuredTool, its arguments, its answers (`create_recall_tool`), and
  `search_for_model` (the same search for the MCP server);
- `listings`: conversation and observation listings, and the cursors that page them;
- `archives`: rolling archives, listed and read a chunk at a time.
"""

from .tool import TOOL_NAME, RecallArguments, create_recall_tool, search_for_model

__all__ = ["TOOL_NAME", "RecallArguments", "create_recall_tool", "search_for_model"]
