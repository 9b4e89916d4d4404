"""Documents as the nodes of the theme hierarchy.

A global question ("which pages cover X?") is answered by a set of documents, and a theme in a
documentation set or a notes vault is a group of documents, not of sentences: the hierarchy is
therefore built over documents, and each document carries what the graph already knows of it
(its chunks' vectors, units, entities and outgoing hyperlinks). Built from a snapshot in memory,
deterministically (documents in sorted id order).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from cuerag.graph.snapshot import Graph


def normalized(rows: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.maximum(norms, 1e-12)).astype(np.float32)


@dataclass(frozen=True)
class DocTable:
    """The snapshot's documents in a fixed order, with their chunks and a vector each."""

    doc_ids: list[str]
    doc_chunks: list[list[int]]  # chunk positions of each document, in reading order
    chunk_doc: np.ndarray  # (n_chunks,) document position of each chunk
    vectors: np.ndarray  # (n_docs, dim): the normalised mean of the document's chunk vectors
    titles: list[str]

    @cached_property  # read once per aspect of every global question: made once per table
    def lead_chunks(self) -> np.ndarray:
        """Each document's first chunk (its title and opening: where a page says what it is about)."""
        return np.array([chunks[0] for chunks in self.doc_chunks], dtype=np.int64)

    @classmethod
    def build(cls, graph: Graph) -> DocTable:
        by_doc = graph.doc_chunks()
        doc_ids = sorted(by_doc)
        chunk_doc = np.zeros(len(graph.chunk_ids), dtype=np.int64)
        dim = graph.chunk_vectors.shape[1] if graph.chunk_vectors.ndim == 2 else 0
        vectors = np.zeros((len(doc_ids), dim), dtype=np.float32)
        for d, doc in enumerate(doc_ids):
            chunks = by_doc[doc]
            chunk_doc[chunks] = d
            if dim:
                vectors[d] = graph.chunk_vectors[chunks].mean(axis=0)
        return cls(
            doc_ids=doc_ids,
            doc_chunks=[by_doc[doc] for doc in doc_ids],
            chunk_doc=chunk_doc,
            vectors=normalized(vectors) if dim else vectors,
            titles=[graph.chunk_titles[by_doc[doc][0]] for doc in doc_ids],
        )

    def __len__(self) -> int:
        return len(self.doc_ids)

    def doc_texts(self, graph: Graph) -> list[str]:
        """Each document's full text (titles and sections included), for lexical statistics."""
        return ["\n".join(graph.chunk_full_text(c) for c in chunks) for chunks in self.doc_chunks]

    def doc_units(self, graph: Graph) -> list[list[int]]:
        """Each document's knowledge units, in reading order, each once."""
        out = []
        for chunks in self.doc_chunks:
            out.append(list(dict.fromkeys(u for c in chunks for u in graph.chunk_units[c])))
        return out

    def doc_entities(self, graph: Graph) -> list[set[int]]:
        """The entities each document's units mention."""
        return [{e for u in units for e in graph.unit_entities[u]} for units in self.doc_units(graph)]

    def doc_links(self, graph: Graph) -> list[set[int]]:
        """Each document's hyperlinks to other corpus documents (document positions)."""
        pos = {doc: d for d, doc in enumerate(self.doc_ids)}
        out: list[set[int]] = [set() for _ in self.doc_ids]
        for c, links in enumerate(graph.chunk_links):
            d = int(self.chunk_doc[c])
            out[d] |= {pos[t] for t in links.values() if t in pos and pos[t] != d}
        return out
