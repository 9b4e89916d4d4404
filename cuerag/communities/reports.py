"""Extractive community reports: what a theme is about, with no LLM.

A report names its community by its most *specific* terms (words far more frequent in its
documents than in the corpus, by TF-IDF contrast), lists its top entities (frequent inside, rare
outside, names rather than formula pieces), and quotes a handful of representative units chosen by
maximal marginal relevance (close to the community's centroid, far from each other: coverage, not
five look-alikes), each cited to its chunk and document; a unit too short to say anything
(`says_something`) is never quoted. Its vector (the normalised mean of its documents' vectors) is
what a question is compared with.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuerag.communities.documents import DocTable, normalized
from cuerag.communities.hierarchy import Community, Hierarchy
from cuerag.graph.snapshot import Graph

# Words (with a letter in them) a unit needs to be quoted as a statement. A documentation page's
# admonition labels ("Danger", "Note") and sentences whose inline markup was stripped ("Use .",
# "See :") are units of their own, and shown as a theme's statements they say nothing.
MIN_STATEMENT_WORDS = 3

# What a top entity needs to name something: two letters in a row. NER on a page of math or
# markup returns formula pieces ("x^2", "(1)", "a_1") and bare numbers; listed as what a theme is
# about, they tell a reader nothing.
_NAME_LIKE = re.compile(r"[^\W\d_]{2}")


@dataclass(frozen=True)
class Evidence:
    unit_id: str
    chunk_id: str
    doc_id: str
    text: str


@dataclass(frozen=True)
class Report:
    id: str
    level: int
    title: str
    terms: list[str]
    entities: list[str]
    evidence: list[Evidence]
    documents: list[str]
    parent: str | None
    children: list[str]
    vector: np.ndarray
    # Written by an LLM from the report above when one is configured (cuerag.communities.summaries).
    llm_title: str | None = None
    llm_summary: str | None = None
    llm_model: str | None = None

    @property
    def shown_title(self) -> str:
        """The title a reader sees: the LLM's when it wrote one, else the extractive title."""
        return self.llm_title or self.title


def says_something(text: str) -> bool:
    """Whether a unit is long enough to quote as a statement (`MIN_STATEMENT_WORDS`)."""
    return sum(1 for word in text.split() if any(ch.isalpha() for ch in word)) >= MIN_STATEMENT_WORDS


def mmr(candidates: np.ndarray, target: np.ndarray, k: int, lam: float = 0.6) -> list[int]:
    """Maximal marginal relevance: k rows of `candidates` near `target` and unlike each other."""
    if len(candidates) == 0:
        return []
    rel = candidates @ target
    chosen: list[int] = []
    best_sim = np.full(len(candidates), -np.inf)
    for _ in range(min(k, len(candidates))):
        redundancy = np.where(np.isfinite(best_sim), best_sim, 0.0)
        score = lam * rel - (1 - lam) * redundancy
        score[chosen] = -np.inf
        pick = int(np.argmax(score))
        chosen.append(pick)
        best_sim = np.maximum(best_sim, candidates @ candidates[pick])
    return chosen


def _same_word(a: str, b: str) -> bool:
    """Whether two terms are one word in its singular and plural: a theme titled "errors · logging
    · error" (Flask's documentation) spent a third of its title on nothing new."""
    short, long = sorted((a, b), key=len)
    return long in (short + "s", short + "es")


class ReportWriter:
    """Writes the reports of one hierarchy over one snapshot's documents."""

    def __init__(self, graph: Graph, docs: DocTable, tfidf: Any, vocabulary: list[str]) -> None:
        self.graph = graph
        self.docs = docs
        self.tfidf = tfidf
        self.vocabulary = vocabulary
        self.corpus_mean = np.asarray(tfidf.mean(axis=0)).ravel()
        self.doc_units = docs.doc_units(graph)
        self.doc_entities = docs.doc_entities(graph)
        df: Counter[int] = Counter(e for ents in self.doc_entities for e in ents)
        self.entity_idf = {e: math.log((1 + len(docs)) / (1 + n)) + 1 for e, n in df.items()}

    def terms(self, members: list[int], k: int = 3) -> list[str]:
        if not self.vocabulary:
            return []
        contrast = np.asarray(self.tfidf[members].mean(axis=0)).ravel() - self.corpus_mean
        picked: list[str] = []
        for i in np.argsort(-contrast, kind="stable"):
            if len(picked) == k or contrast[i] <= 0:
                break
            term = self.vocabulary[i]
            if not any(_same_word(term, other) for other in picked):
                picked.append(term)
        return picked

    def entities(self, members: list[int], k: int = 8) -> list[str]:
        counts: Counter[int] = Counter(e for d in members for e in self.doc_entities[d])
        ranked = sorted(counts, key=lambda e: (-counts[e] * self.entity_idf[e], self.graph.entity_names[e]))
        names: list[str] = []
        for e in ranked:
            name = self.graph.entity_names[e]
            if _NAME_LIKE.search(name) and name.casefold() not in {n.casefold() for n in names}:
                names.append(name)
            if len(names) >= k:
                break
        return names

    def evidence(self, members: list[int], vector: np.ndarray, k: int = 5) -> list[Evidence]:
        units = [u for d in members for u in self.doc_units[d] if says_something(self.graph.unit_texts[u])]
        if not units:
            return []
        picked = mmr(self.graph.unit_vectors[units], vector, k)
        g = self.graph
        out = []
        for i in picked:
            u = units[i]
            c = g.unit_chunks[u][0]
            out.append(
                Evidence(unit_id=g.unit_ids[u], chunk_id=g.chunk_ids[c], doc_id=g.chunk_docs[c], text=g.unit_texts[u])
            )
        return out

    def report(self, community: Community) -> Report:
        members = community.members
        vector = normalized(self.docs.vectors[members].mean(axis=0, keepdims=True))[0]
        terms = self.terms(members)
        return Report(
            id=community.id,
            level=community.level,
            title=" · ".join(terms) if terms else self.docs.titles[members[0]],
            terms=terms,
            entities=self.entities(members),
            evidence=self.evidence(members, vector),
            documents=[self.docs.doc_ids[d] for d in members],
            parent=community.parent,
            children=list(community.children),
            vector=vector,
        )

    def all(self, hierarchy: Hierarchy) -> dict[str, Report]:
        return {cid: self.report(c) for cid, c in sorted(hierarchy.communities.items())}
