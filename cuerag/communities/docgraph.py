"""The document graph the theme hierarchy is clustered on.

Several independent kinds of evidence that two documents belong to one theme, each optional, so
a corpus without hyperlinks or titles (a folder of notes, HotpotQA-like passages) still gets a
connected graph:

* dense kNN: each document's nearest documents by the cosine of their mean chunk vectors (what
  ArchRAG's attribute augmentation adds, here the main source since it always exists);
* lexical kNN: nearest documents by the cosine of their TF-IDF vectors (sublinear tf, words in at
  least two documents and at most half of them): shared *specific* vocabulary, the noun-phrase
  concepts that themes are made of when NER misses them;
* hyperlinks between the two documents (either direction);
* shared entities, each weighted by how specific it is (1 / log2(1 + its document frequency)),
  entities in more than `max_entity_share` of the documents ignored (hubs join everything).

Each source is scaled to [0, 1] and the weighted sum is the edge weight.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuerag.communities.documents import DocTable
from cuerag.graph.snapshot import Graph

Edge = tuple[int, int, float]


@dataclass(frozen=True)
class DocGraphParams:
    knn: int = 8  # dense neighbours per document
    lexical_knn: int = 8  # TF-IDF neighbours per document
    dense_weight: float = 1.0
    lexical_weight: float = 1.0
    link_weight: float = 0.5
    entity_weight: float = 0.5
    max_entity_share: float = 0.05


def knn_edges(vectors: Any, k: int, *, block: int = 1024) -> dict[tuple[int, int], float]:
    """Each row's k most similar other rows (cosine; rows normalised, dense or scipy-sparse), as
    undirected edges with the similarity; ties broken by position so the result is deterministic.
    Computed in blocks of rows, so memory stays O(block × n)."""
    n = vectors.shape[0]
    out: dict[tuple[int, int], float] = {}
    if n < 2 or k <= 0:
        return out
    k = min(k, n - 1)
    for start in range(0, n, block):
        rows = vectors[start : start + block] @ vectors.T
        sims = np.asarray(rows.todense() if hasattr(rows, "todense") else rows, dtype=np.float32)
        for r in range(sims.shape[0]):
            i = start + r
            sims[r, i] = -np.inf
            for j in np.argsort(-sims[r], kind="stable")[:k]:
                s = float(sims[r, j])
                if s > 0:
                    key = (min(i, int(j)), max(i, int(j)))
                    out[key] = max(out.get(key, 0.0), s)
    return out


def tfidf_vectors(texts: list[str]) -> tuple[Any, list[str]]:
    """Normalised TF-IDF rows (a scipy CSR matrix) over words found in 2+ documents and in at most
    half of them, and the vocabulary (column order)."""
    from scipy import sparse
    from sklearn.feature_extraction.text import TfidfVectorizer

    empty = sparse.csr_matrix((len(texts), 1), dtype=np.float32)
    if len(texts) < 3:
        return empty, []
    vectorizer = TfidfVectorizer(
        stop_words="english", sublinear_tf=True, min_df=2, max_df=0.5, token_pattern=r"(?u)\b[^\W\d_]{3,}\b"
    )
    try:
        matrix = vectorizer.fit_transform(texts)
    except ValueError:  # no word passes the document-frequency bounds
        return empty, []
    return matrix.astype(np.float32).tocsr(), list(vectorizer.get_feature_names_out())


def entity_edges(doc_entities: list[set[int]], max_share: float) -> dict[tuple[int, int], float]:
    """Documents sharing entities, each entity weighted by its specificity."""
    n = len(doc_entities)
    docs_of: dict[int, list[int]] = defaultdict(list)
    for d, ents in enumerate(doc_entities):
        for e in ents:
            docs_of[e].append(d)
    cap = max(2, int(max_share * n))
    out: dict[tuple[int, int], float] = defaultdict(float)
    for e in sorted(docs_of):
        docs = docs_of[e]
        if len(docs) < 2 or len(docs) > cap:
            continue
        w = 1.0 / math.log2(1 + len(docs))
        for a_i, a in enumerate(docs):
            for b in docs[a_i + 1 :]:
                out[(a, b)] += w
    return dict(out)


def _scaled(edges: dict[tuple[int, int], float]) -> dict[tuple[int, int], float]:
    top = max(edges.values(), default=0.0)
    return {k: v / top for k, v in edges.items()} if top > 0 else {}


def document_edges(graph: Graph, docs: DocTable, tfidf: Any, params: DocGraphParams | None = None) -> list[Edge]:
    """The weighted, undirected document graph (edges sorted, so clustering input is stable);
    `tfidf`: the documents' rows from `tfidf_vectors`."""
    params = params or DocGraphParams()
    sources: list[tuple[float, dict[tuple[int, int], float]]] = []
    if params.dense_weight > 0 and docs.vectors.shape[1]:
        sources.append((params.dense_weight, knn_edges(docs.vectors, params.knn)))
    if params.lexical_weight > 0:
        sources.append((params.lexical_weight, knn_edges(tfidf, params.lexical_knn)))
    if params.link_weight > 0:
        links: dict[tuple[int, int], float] = {}
        for a, targets in enumerate(docs.doc_links(graph)):
            for b in targets:
                links[(min(a, b), max(a, b))] = 1.0
        sources.append((params.link_weight, links))
    if params.entity_weight > 0:
        sources.append((params.entity_weight, _scaled(entity_edges(docs.doc_entities(graph), params.max_entity_share))))
    total: dict[tuple[int, int], float] = defaultdict(float)
    for weight, edges in sources:
        for key, value in edges.items():
            total[key] += weight * value
    return sorted((a, b, round(w, 6)) for (a, b), w in total.items() if w > 0)
