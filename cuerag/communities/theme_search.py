"""One-call global search for an agent: cited statements grouped by theme, within a token budget.

For a broad question:

1. **documents**: the `global` ranking (`cuerag.communities.global_ranking`: the question's own
   relevance by dense, BM25 and Q-Iter's walk, blended with its communities', the question's
   listed aspects each given their own pages, the question's own best two first), the first
   `documents_for(budget)` of it. Global search answers from the ranking that the benchmarks
   measure (docs/global.md): before, it chose leaf themes by the cosine of their mean vector and
   the units nearest the question inside them, and a subject's own page, first in the ranking,
   gave 1 of 25 statements (a new user's report on Flask's manual).
2. **units of each document**: its `UNITS_PER_DOCUMENT` units nearest the question (`LEAD_UNITS`
   for the first two), of those long enough to say something
   (`cuerag.communities.reports.says_something`).
3. **relevance**: the reranker scores every candidate against the question (one call; without a
   reranker configured, the stored vectors' cosine, as in Q-Iter), and the candidates scoring under
   `RELEVANCE_FLOOR` of the best are dropped; the rest are taken, each skipped when it nearly
   repeats one taken (cosine of unit vectors over `DUPLICATE_COSINE`) or would pass the token
   budget: first each document's best, in the ranking's order (documents covered before a second
   statement of one), then the rest best first, at most `statements_per_theme` a theme.
4. **grouped by theme**: each document's leaf community; themes in the order of their best-ranked
   document, statements best first within a theme, each cited to its chunk and document, with the
   share of the corpus's documents they cite and the share the themes hold.

A "what is in this corpus" question (or no question) gets the overview instead: the top-level
themes by size, each with its report's first statements, until the budget is spent.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel

from cuerag.communities.aspects import KEEP_FIRST
from cuerag.communities.documents import DocTable
from cuerag.communities.hierarchy import Hierarchy
from cuerag.communities.reports import Report, says_something
from cuerag.graph.snapshot import Graph
from cuerag.models.base import TextReranker

# How many of the ranking's documents a budget reads: one per `TOKENS_PER_DOCUMENT` tokens, between
# `MIN_DOCUMENTS` and `MAX_DOCUMENTS` (the default 2000 tokens: 20, the depth the global sets'
# recall is measured at), each giving `UNITS_PER_DOCUMENT` candidates to the reranker.
TOKENS_PER_DOCUMENT = 100
MIN_DOCUMENTS = 5
MAX_DOCUMENTS = 40
UNITS_PER_DOCUMENT = 3
# The ranking's first documents (the question's own best two, `aspects.KEEP_FIRST`) are most often
# the subject's own pages: they give twice as many candidates (a new user's "what does the manual
# say about security?" wanted more of security.html than three statements).
LEAD_UNITS = 2 * UNITS_PER_DOCUMENT
# A theme's share of statements grows with the budget: one per `TOKENS_PER_STATEMENT` tokens,
# between `MIN_STATEMENTS_PER_THEME` and `MAX_STATEMENTS_PER_THEME`. Each document's first
# statement is not counted against it: a theme of many ranked documents cites them all.
TOKENS_PER_STATEMENT = 500
MIN_STATEMENTS_PER_THEME = 4
MAX_STATEMENTS_PER_THEME = 12
# A statement is kept only when it scores at least this share of the question's best statement
# (with the best above zero). Read off the scores of 8 questions on the python-attr-doc pages (16
# Sphinx pages, the default cross-encoder, no floor, 12 candidates a theme; docs/global.md):
# on-topic statements mostly scored 0.55-1.0 of the best, the off-topic ones 0.2-0.5 (the license
# page's contributors line 0.43), and both kinds occur between 0.45 and 0.55: the floor sits in the
# middle of that overlap.
RELEVANCE_FLOOR = 0.5
DUPLICATE_COSINE = 0.92
MIN_BUDGET_TOKENS = 100
MAX_BUDGET_TOKENS = 20_000

# Questions about the corpus itself rather than a subject in it. Each form must end the question
# (bar punctuation): "what does the documentation say about security?" or "an overview of the
# security model" name a subject, and get theme search, not the corpus's top themes. The corpus
# goes by what people call a documentation set, a manual, guide or book too: "What are the main
# topics of this manual?" searched as a subject gave the statements nearest "topics" and "manual"
# ("Sounds complicated but is very basic.", "I will outline each of them here:") and left out a
# whole top theme (Flask's 74 pages, Debian python-flask-doc). The forms are matched on the
# question with its blanks made single spaces and its closing punctuation cut (`is_overview`), each
# of bounded length before the end: written on the raw question, with `\s*[?.!]*\s*$` after each
# form and `what\s+.*` before the last, one question of the tools' 4,000 characters ("what",
# blanks, "docs about", blanks, "x") backtracked for 48 s, holding the GIL and with it every other
# call of the process.
_CORPUS = (
    r"(corpus|collection|documentation|docs|vault|notes|documents"
    r"|manuals?|guides?|handbooks?|books?|reference|wiki|knowledge base)"
)
_THIS = r"(this|the|these|our|my)"
_OF_CORPUS = rf"( (covered )?(of|in|by) {_THIS} {_CORPUS})?"
_OVERVIEW = re.compile(
    rf"\b(main|key|major|top) (topics|themes|subjects){_OF_CORPUS}$"
    rf"|\bwhat (is|are|does|do) (in )?{_THIS} {_CORPUS}( (contains?|covers?|holds?|includes?))?( about)?$"
    rf"|\boverview{_OF_CORPUS}$"
    rf"|\bsummar(y|ise|ize)( of)? {_THIS} {_CORPUS}$"
    rf"|\bwhat (topics|themes|subjects) are (covered|discussed){_OF_CORPUS}$",
    re.IGNORECASE,
)
# "what ... the docs cover": the corpus asked about at the end, and a "what" anywhere before it
# (two searches, each linear, for what one `what .*` would backtrack over).
_CORPUS_ASKED = re.compile(rf"\b{_CORPUS} (about|contains?|holds?|covers?)$", re.IGNORECASE)
_WHAT = re.compile(r"\bwhat ", re.IGNORECASE)


class Statement(BaseModel):
    text: str
    unit_id: str
    chunk_id: str
    doc_id: str
    title: str
    score: float


class ThemeGroup(BaseModel):
    theme_id: str
    title: str  # the LLM's title when one wrote it, else the extractive one
    level: int
    documents: int  # documents in the theme
    statements: list[Statement]
    summary: str | None = None  # written by the LLM (cuerag.communities.summaries); None without one


class GlobalSearchResult(BaseModel):
    corpus: str
    query: str
    overview: bool  # the question asked what the corpus holds: top themes by size
    groups: list[ThemeGroup]
    documents_cited: int
    corpus_documents: int
    coverage: float  # documents cited / documents in the corpus
    theme_coverage: float  # documents in the themes returned / documents in the corpus
    tokens: int
    budget_tokens: int
    elapsed_ms: float


def is_overview(question: str) -> bool:
    if not question.strip():  # no question: the overview
        return True
    # Blanks made single spaces, then the closing punctuation and blanks cut, as the forms expect.
    core = " ".join(question.split()).rstrip("?.!").rstrip()
    if _OVERVIEW.search(core):
        return True
    asked = _CORPUS_ASKED.search(core)
    return asked is not None and _WHAT.search(core, 0, asked.start()) is not None


def statements_per_theme(budget_tokens: int) -> int:
    """How many statements (and candidates) one theme may give for a budget (see the constants)."""
    return max(MIN_STATEMENTS_PER_THEME, min(MAX_STATEMENTS_PER_THEME, budget_tokens // TOKENS_PER_STATEMENT))


def relevance_threshold(scores: np.ndarray) -> float:
    """The least score kept: `RELEVANCE_FLOOR` of the best; no floor when the best is not above
    zero (cosines or logits of a question nothing answers well: the order still holds)."""
    best = float(np.max(scores)) if len(scores) else 0.0
    return RELEVANCE_FLOOR * best if best > 0 else float("-inf")


def documents_for(budget_tokens: int) -> int:
    """How many of the ranking's documents one budget reads (see the constants)."""
    return max(MIN_DOCUMENTS, min(MAX_DOCUMENTS, budget_tokens // TOKENS_PER_DOCUMENT))


class ThemeSearch:
    """Global search over one snapshot's hierarchy and reports."""

    def __init__(
        self,
        corpus: str,
        graph: Graph,
        docs: DocTable,
        hierarchy: Hierarchy,
        reports: dict[str, Report],
        count_tokens: Callable[[str], int],
    ) -> None:
        self.corpus = corpus
        self.graph = graph
        self.docs = docs
        self.hierarchy = hierarchy
        self.reports = reports
        self.count_tokens = count_tokens

    def _statement(self, unit: int, score: float) -> Statement:
        g = self.graph
        chunk = g.unit_chunks[unit][0]
        return Statement(
            text=g.unit_texts[unit],
            unit_id=g.unit_ids[unit],
            chunk_id=g.chunk_ids[chunk],
            doc_id=g.chunk_docs[chunk],
            title=g.chunk_titles[chunk],
            score=round(score, 4),
        )

    def search(
        self,
        question: str,
        qvec: np.ndarray,
        reranker: TextReranker | None,
        budget_tokens: int,
        ranked: Sequence[int] = (),
    ) -> GlobalSearchResult:
        """`ranked`: the corpus's documents (positions in the document table) best first for the
        question, as `global_ranking` orders them; read up to `documents_for(budget_tokens)`."""
        started = time.perf_counter()
        if is_overview(question):
            groups, tokens = self._overview(budget_tokens)
            return self._result(question, True, groups, tokens, budget_tokens, started)
        g = self.graph
        leaf_of = self.hierarchy.leaf_of()
        rank = {d: r for r, d in enumerate(dict.fromkeys(ranked[: documents_for(budget_tokens)]))}
        candidates: list[tuple[int, int]] = []  # (document, unit)
        for d, r in rank.items():
            units = list(
                dict.fromkeys(
                    u for c in self.docs.doc_chunks[d] for u in g.chunk_units[c] if says_something(g.unit_texts[u])
                )
            )
            if units:
                sims = g.unit_vectors[units] @ qvec
                depth = LEAD_UNITS if r < KEEP_FIRST else UNITS_PER_DOCUMENT
                candidates += [(d, units[int(i)]) for i in np.argsort(-sims, kind="stable")[:depth]]
        if reranker is not None and candidates:
            scores = np.asarray(reranker.score(question, [g.unit_texts[u] for _, u in candidates]))
        else:  # no reranker configured: the stored vectors' cosine, as Q-Iter scores then
            scores = np.asarray([float(g.unit_vectors[u] @ qvec) for _, u in candidates])
        least = relevance_threshold(scores)
        by_score = [int(i) for i in np.argsort(-scores, kind="stable") if scores[i] >= least]
        # First each document's best statement, in the ranking's order; then the rest by score.
        best_of: dict[int, int] = {}
        for i in by_score:
            best_of.setdefault(candidates[i][0], i)
        firsts = [best_of[d] for d in rank if d in best_of]
        per_theme = statements_per_theme(budget_tokens)
        picked: dict[str, list[Statement]] = {}
        extra: dict[str, int] = {}
        taken: list[int] = []
        tokens = 0
        for first_pass, order in ((True, firsts), (False, by_score)):
            for i in order:
                d, unit = candidates[i]
                cid = leaf_of.get(d)
                if cid is None or unit in taken:
                    continue
                if not first_pass and extra.get(cid, 0) >= per_theme:
                    continue
                if taken and float(np.max(g.unit_vectors[taken] @ g.unit_vectors[unit])) > DUPLICATE_COSINE:
                    continue
                title = 0 if cid in picked else self._heading_tokens(self.reports[cid])
                cost = self.count_tokens(g.unit_texts[unit]) + title
                if tokens + cost > budget_tokens:
                    continue
                tokens += cost
                taken.append(unit)
                if not first_pass:
                    extra[cid] = extra.get(cid, 0) + 1
                picked.setdefault(cid, []).append(self._statement(unit, float(scores[i])))
        # Themes in the order of their best-ranked document (the first pass went in the ranking's
        # order), each theme's statements best first.
        groups = [self._group(cid, sorted(statements, key=lambda s: -s.score)) for cid, statements in picked.items()]
        return self._result(question, False, groups, tokens, budget_tokens, started)

    def _heading_tokens(self, report: Report) -> int:
        """What a group's heading costs of the budget: its title, and its summary when it has one."""
        tokens = self.count_tokens(report.shown_title)
        return tokens if report.llm_summary is None else tokens + self.count_tokens(report.llm_summary)

    def _group(self, cid: str, statements: list[Statement]) -> ThemeGroup:
        report = self.reports[cid]
        return ThemeGroup(
            theme_id=cid,
            title=report.shown_title,
            level=report.level,
            documents=len(report.documents),
            statements=statements,
            summary=report.llm_summary,
        )

    def _overview(self, budget_tokens: int) -> tuple[list[ThemeGroup], int]:
        roots = sorted(self.hierarchy.roots(), key=lambda c: (-c.size, c.id))
        groups: list[ThemeGroup] = []
        tokens = 0
        pos = self.graph.unit_pos
        for community in roots:
            report = self.reports[community.id]
            # Reports stored by an older version may quote fragments: they are passed over here too.
            quoted = [e for e in report.evidence if e.unit_id in pos and says_something(e.text)][:2]
            if not quoted:  # a theme with nothing to quote is left out; the budget is not spent
                continue
            statements = []
            cost = self._heading_tokens(report)
            for e in quoted:
                step = self.count_tokens(e.text)
                if tokens + cost + step > budget_tokens:
                    break
                cost += step
                statements.append(self._statement(pos[e.unit_id], 0.0))
            if not statements:
                break
            tokens += cost
            groups.append(self._group(community.id, statements))
        return groups, tokens

    def _result(
        self,
        question: str,
        overview: bool,
        groups: list[ThemeGroup],
        tokens: int,
        budget_tokens: int,
        started: float,
    ) -> GlobalSearchResult:
        n = max(len(self.docs), 1)
        cited = {s.doc_id for g in groups for s in g.statements}
        in_themes = {d for g in groups for d in self.reports[g.theme_id].documents}
        return GlobalSearchResult(
            corpus=self.corpus,
            query=question,
            overview=overview,
            groups=groups,
            documents_cited=len(cited),
            corpus_documents=len(self.docs),
            coverage=round(len(cited) / n, 4),
            theme_coverage=round(len(in_themes) / n, 4),
            tokens=tokens,
            budget_tokens=budget_tokens,
            elapsed_ms=round((time.perf_counter() - started) * 1000, 2),
        )
