"""An embedder that cannot run here, measured all the same: its vectors computed elsewhere.

A model that needs torch (or a GPU, or an API key) is measured on LoCoMo dev by its vectors:
write the texts the evaluation embeds, embed them wherever the model runs, and give the
vectors to ``recall_eval.py --vectors``, which then looks every text up instead of embedding
it (queries as documents: a model that embeds them apart needs its own query vectors).

    python bench/precomputed.py texts.json            # every piece of every turn, every question
    # wherever the model runs (here: a venv with torch 2.13 CPU and sentence-transformers):
    #   texts = json.load(open("texts.json"))
    #   model = SentenceTransformer("all-mpnet-base-v2")
    #   np.savez("mpnet.npz", texts=np.array(texts), model="all-mpnet-base-v2",
    #            vectors=model.encode(texts, normalize_embeddings=True))
    python bench/recall_eval.py --skip-synthetic --vectors mpnet.npz
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

sys.path.insert(0, str(Path(__file__).parent))
from locomo_data import DEFAULT_DATA, conversation_turns, questions_of, turn_message

from langchain_mastra_memory.messages import embedding_pieces

DIMENSION_PROBE = "dimension"  # what an index embeds once to learn the model's dimension


def eval_texts(path: Path) -> list[str]:
    """Every text the LoCoMo evaluation embeds: each turn's pieces and each question."""
    texts = {DIMENSION_PROBE}
    for file in sorted(path.glob("*.json")):
        data = json.loads(file.read_text())
        for _, _, turns in conversation_turns(data):
            for turn in turns:
                texts.update(embedding_pieces(turn_message(turn, data["speaker_a"])))
        texts.update(qa["question"] for qa in questions_of(data))
    return sorted(texts)


class Precomputed(Embeddings):
    """Vectors looked up by text from an ``.npz`` of ``texts``, ``vectors`` and ``model``; a
    text it lacks is an error (the vectors were made for another data set)."""

    symmetric = True  # one vector per text, whether embedded as a query or a document

    def __init__(self, path: Path) -> None:
        data = np.load(path)
        self.model_name = str(data["model"])
        self.vectors = np.asarray(data["vectors"], dtype=np.float32)
        self.row = {str(t): i for i, t in enumerate(data["texts"])}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        if text not in self.row:
            raise KeyError(f"no precomputed vector for {text[:60]!r}: embed eval_texts() again")
        return self.vectors[self.row[text]].tolist()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    Path(sys.argv[1]).write_text(json.dumps(eval_texts(DEFAULT_DATA)))
