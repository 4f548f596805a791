"""The ranking stages between a search's pieces and the messages recall returns:

- `fusion`: a message scored by its best piece, vector and keyword results fused (`RecallHit`);
- `context`: the built-in second stage, a candidate ranked with the conversation around it;
- `dates`: the dates a query names, and the messages of those days;
- `rerank`: any LangChain document compressor as the second stage.

Of recall it imports the contract (`recall.vector`) and `recall.embedders` only (below recall:
storage's records, messages); the front (`index`) runs the stages.
"""
