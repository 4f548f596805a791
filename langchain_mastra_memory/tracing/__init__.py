"""What memory did, in the traces people already read.

Each step memory takes for a turn (the whole assembly, the working-memory read, recall, and the
user's processors inside it) runs as a child run of the run it happens in, so LangSmith and any
LangChain tracer show it under the hook's, middleware's or chain's run; recall is a
``retriever`` run whose output is the recalled messages as Documents (score, thread, time).
When an OpenTelemetry tracer provider is configured, the same steps are spans. With neither,
a step costs one config lookup. Nothing in a run is another resource's: a run holds what the
step read for its own resource, as the context does.
"""

from .runs import Traced, traced

__all__ = ["Traced", "traced"]
