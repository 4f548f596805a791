"""Configuration: `options` (`MemoryOptions`, Mastra's option names), `params` (keyword
arguments shared by `Memory`'s methods) and `call_options` (what one call changes through its
``config``)."""
