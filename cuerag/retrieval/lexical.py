"""Q-Iter's lexical channel: Okapi BM25 over the graph's units and chunks, built from a snapshot's
texts (bm25s, in memory), read as scores scaled to [0, 1] per query.

Technical questions turn on identifiers (a pragma, a function, an error code) that an embedder
blurs and a term match sees. Q-Iter fuses this evidence with the embedder's at each step where it
chooses text: the units it anchors on, the units each hop takes, and the chunks it returns.
Scores are divided by the query's best score over the corpus, so 1 is the best lexical match
there is and a query sharing no term with the corpus adds nothing; the fusion is then a convex
combination with the cosine, whose weight (`lexical_weight`) was measured (docs/benchmarks.md).

Built in memory rather than stored as sparse vectors: the index follows the snapshot it was
built from, needs no re-indexing of existing corpora, and is the same on every store backend; a
snapshot after an add or a delete gets a new one, so it is always the index of exactly its texts.

Terms are not stemmed by default. Stemming (`stem`, Snowball English through PyStemmer) lets a
question asking about "backups" match the pages that say "backup" (one of seven did, unstemmed),
but measured on the SQLite docs it cost BM25 six questions at R@5 and Q-Iter four, against one
gained each (docs/benchmarks.md): a manual's identifiers and terms of art lose their edges when
folded together. It stays off until a tokenisation holds on every family.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from cuerag.graph.snapshot import Graph
from cuerag.retrieval.scoring import Scorer


def load_bm25s() -> ModuleType:
    """bm25s, imported on first use (it is not needed to open a corpus)."""
    import bm25s

    # bm25s sets its own logger to DEBUG when imported: its index-building lines would reach
    # stderr on every query of the CLI and the server.
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


def _stemmer() -> Callable[[list[str]], list[str]]:
    """Snowball's English stemmer, a new one per call: a PyStemmer object keeps a cache and is not
    safe to share between threads (the server answers queries on several)."""
    import Stemmer

    stem: Callable[[list[str]], list[str]] = Stemmer.Stemmer("english").stemWords
    return stem


def _tokens(texts: Sequence[str], *, stem: bool) -> list[list[str]]:
    """Lower case, English stop words out, stemmed with `stem`: the same for a query as for the index."""
    bm25s = load_bm25s()

    tokens: list[list[str]] = bm25s.tokenize(
        list(texts), stopwords="en", stemmer=_stemmer() if stem else None, return_ids=False, show_progress=False
    )
    return tokens


class _BM25:
    """BM25 over one list of texts, scoring every text against a query."""

    def __init__(self, texts: Sequence[str], *, stem: bool) -> None:
        bm25s = load_bm25s()

        self._size = len(texts)
        self._model = bm25s.BM25()
        tokenized = (
            bm25s.tokenize(list(texts), stopwords="en", stemmer=_stemmer() if stem else None, show_progress=False)
            if texts
            else None
        )
        # Texts without a single word (punctuation, emoji) leave nothing to index, and bm25s fails on
        # an empty vocabulary: such a corpus matches no query.
        self._indexed = tokenized is not None and bool(tokenized.vocab)
        if self._indexed:
            self._model.index(tokenized, show_progress=False)

    def _known(self, terms: Sequence[str]) -> list[str]:
        return [t for t in terms if t in self._model.vocab_dict] if self._indexed else []

    def ranked(self, terms: Sequence[str], n: int) -> list[tuple[int, float]]:
        """The n texts with the best scores above zero, best first (bm25s's own top-k, ties and all)."""
        known = self._known(terms)
        if not known or n <= 0:
            return []
        docs, scores = self._model.retrieve([known], k=min(n, self._size), show_progress=False)
        return [(int(d), float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    def scaled(self, terms: Sequence[str]) -> np.ndarray:
        """Every text's score divided by the best one (all zeros when nothing matches)."""
        known = self._known(terms)
        if not known:
            return np.zeros(self._size, dtype=np.float32)
        scores = np.asarray(self._model.get_scores(known), dtype=np.float32)
        best = float(scores.max())
        return scores / best if best > 0 else np.zeros(self._size, dtype=np.float32)


@dataclass(frozen=True)
class LexicalScores:
    """One query's lexical evidence: a score in [0, 1] for every unit and every chunk."""

    units: np.ndarray
    chunks: np.ndarray

    def top_units(self, k: int) -> list[tuple[int, float]]:
        """The k units with the best lexical score above zero."""
        return top(self.units, k)

    def top_chunks(self, k: int) -> list[tuple[int, float]]:
        """The k chunks with the best lexical score above zero."""
        return top(self.chunks, k)


def lexical_share(cosines: np.ndarray) -> float:
    """How much of the lexical weight a query gets, in [0, 1], from how far its best dense match
    stands out of the corpus. The best cosine's distance above the mean of all, in standard
    deviations, is set against the best of as many random draws: for n normal draws that is
    about sqrt(2 ln n), give or take pi / sqrt(6) / sqrt(2 ln n) (the spread of a maximum). A
    query whose best match stands out no more than chance gets the whole weight: the embedder
    cannot tell this corpus's texts apart for it, as in a corpus on a single subject where every
    page is close to every other and identifiers make the difference. One spread above chance
    and the weight is gone: a query with a clear dense answer is left to the embedder."""
    n = len(cosines)
    deviation = float(cosines.std()) if n > 1 else 0.0
    if deviation <= 0.0:
        return 1.0
    chance = math.sqrt(2 * math.log(n))
    spread = math.pi / math.sqrt(6) / chance
    excess = (float(cosines.max()) - float(cosines.mean())) / deviation - chance
    return min(max(1.0 - excess / spread, 0.0), 1.0)


# Where `homogeneity_floor` starts and ends its ramp, in mean pairwise cosine of a corpus's chunks
# (MiniLM). Measured (docs/benchmarks.md): Wikipedia passage sets, titled or not, lie at 0.02 to 0.08; two
# projects' reference documentation, as JSON, as HTML pages or without titles, at 0.33 to 0.39. The
# ramp sits in the gap, so neither kind is near an edge.
DIVERSE_CORPUS = 0.15
ONE_SUBJECT_CORPUS = 0.3


def corpus_homogeneity(vectors: np.ndarray) -> float:
    """The mean cosine between two distinct texts of a corpus: near 0 for passages on unrelated
    subjects, high for the pages of one project's manual. From the mean of the unit vectors, since
    the sum of all pairwise cosines is the squared norm of their sum (no n x n matrix)."""
    norms = np.linalg.norm(vectors, axis=1)
    unit = vectors[norms > 0] / norms[norms > 0, None]  # a zero vector has no direction to compare
    n = len(unit)
    if n < 2:
        return 0.0
    total = unit.sum(axis=0, dtype=np.float64)
    return (float(total @ total) - n) / (n * (n - 1))


def homogeneity_floor(homogeneity: float) -> float:
    """The least lexical share every query of a corpus gets, from how alike its texts are: none for
    a corpus of unrelated passages, all of it for a corpus on one subject. `lexical_share` cannot
    see this: it measures a query's best match against the spread of the corpus's cosines, and in
    a corpus on one subject that spread is narrow, so a best match that differs little in absolute
    terms still stands out by many deviations and the share goes to zero, just where identifiers
    tell the pages apart (measured on two projects' documentation, docs/benchmarks.md)."""
    ramp = (homogeneity - DIVERSE_CORPUS) / (ONE_SUBJECT_CORPUS - DIVERSE_CORPUS)
    return min(max(ramp, 0.0), 1.0)


def top(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k best positions with a score above zero."""
    if k <= 0 or not len(scores):
        return []
    best = np.argsort(-scores, kind="stable")[:k]
    return [(int(i), float(scores[i])) for i in best if scores[i] > 0]


class LexicalIndex:
    """BM25 over a snapshot's units (their text) and chunks (title and text): Q-Iter's lexical
    channel, and the chunk ranking of the BM25 baseline. `stem`: terms stemmed (off by default,
    see the module's docstring)."""

    def __init__(self, graph: Graph, *, stem: bool = False) -> None:
        self.graph = graph
        self.stem = stem
        self._units = _BM25(graph.unit_texts, stem=stem)
        self._chunks = _BM25([graph.chunk_full_text(c) for c in range(len(graph.chunk_ids))], stem=stem)

    def scores(self, query: str) -> LexicalScores:
        """The query's terms (as `_tokens` reads them) scored against every unit and chunk."""
        terms = _tokens([query], stem=self.stem)[0]
        return LexicalScores(units=self._units.scaled(terms), chunks=self._chunks.scaled(terms))

    def ranked_chunks(self, query: str, n: int) -> list[tuple[int, float]]:
        """The n chunks with the best BM25 scores above zero, with their scores (the baseline's)."""
        return self._chunks.ranked(_tokens([query], stem=self.stem)[0], n)


class LexicalFusion:
    """A scorer whose scores are `(1 - weight) x` the inner scorer's `+ weight x` the lexical
    score: a chunk's own, a path's the mean of its units'."""

    def __init__(self, inner: Scorer, lexical: LexicalScores, weight: float) -> None:
        self._inner = inner
        self._lexical = lexical
        self._weight = weight
        self.name = f"{inner.name}+bm25"

    def score_paths(self, query: str, qvec: np.ndarray, paths: Sequence[Sequence[int]]) -> np.ndarray:
        inner = self._inner.score_paths(query, qvec, paths)
        if not len(paths):
            return inner
        lexical = np.asarray([self._lexical.units[list(p)].mean() for p in paths], dtype=np.float32)
        return (1 - self._weight) * inner + self._weight * lexical

    def score_chunks(self, query: str, qvec: np.ndarray, chunks: Sequence[int]) -> np.ndarray:
        inner = self._inner.score_chunks(query, qvec, chunks)
        if not len(chunks):
            return inner
        return (1 - self._weight) * inner + self._weight * self._lexical.chunks[list(chunks)]
