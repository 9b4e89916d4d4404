"""`q_iter`: the whole CUE-RAG retrieval in one call; `dense_search`: the baseline it beats."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from cuerag import QIterParams, RetrievalResult, make_params
from cuerag.config import (
    KnowledgeAnchoring,
    LexicalCandidates,
    LexicalWeight,
    QIterBeam,
    QIterDepth,
    QIterK,
    QIterTopN,
    QueryTitles,
    QueryUpdate,
    SpreadingActivation,
    TitleLinks,
    TitleSpecificity,
)
from tools.common import READ_ONLY, AppState, Corpus, Query, run_engine, state_of, tool

# Defaults and ranges come from the one declaration in cuerag.config.
_DEFAULTS = QIterParams()


@tool("q_iter", READ_ONLY)
async def q_iter(
    corpus: Corpus,
    query: Query,
    ctx: Context[AppState],
    k: QIterK = _DEFAULTS.k,
    depth: QIterDepth = _DEFAULTS.depth,
    beam: QIterBeam = _DEFAULTS.beam,
    top_n: QIterTopN = _DEFAULTS.top_n,
    knowledge_anchoring: KnowledgeAnchoring = _DEFAULTS.knowledge_anchoring,
    spreading_activation: SpreadingActivation = _DEFAULTS.spreading_activation,
    query_update: QueryUpdate = _DEFAULTS.query_update,
    query_titles: QueryTitles = _DEFAULTS.query_titles,
    title_links: TitleLinks = _DEFAULTS.title_links,
    lexical_weight: LexicalWeight = _DEFAULTS.lexical_weight,
    lexical_candidates: LexicalCandidates = _DEFAULTS.lexical_candidates,
    title_specificity: TitleSpecificity = _DEFAULTS.title_specificity,
    llm_entities: Annotated[
        bool, Field(description="Have the server's LLM read the query's entities (NER otherwise); needs an LLM.")
    ] = False,
) -> RetrievalResult:
    """Multi-hop retrieval (CUE-RAG Q-Iter): anchors on the query's entities, walks entity → unit →
    entity for `depth` hops keeping the `beam` best paths, and returns the `top_n` chunks that hold
    the collected units. The trace lists, per hop, the kept paths (unit ids and texts, the entity
    each step came through, scores): cite it to explain why a chunk came back. A chunk with
    `named_in_query` is one whose title the query names; one with `linked_from` came in (or was
    raised) because that chunk names its title. On documentation or code, where questions name
    identifiers, turn on the lexical channel (lexical_weight=0.35, lexical_candidates=10). Use this first; use
    search_units / expand_entity to walk the graph yourself when the trace shows a missing hop."""
    params: QIterParams = make_params(
        k=k,
        depth=depth,
        beam=beam,
        top_n=top_n,
        knowledge_anchoring=knowledge_anchoring,
        spreading_activation=spreading_activation,
        query_update=query_update,
        query_titles=query_titles,
        title_links=title_links,
        lexical_weight=lexical_weight,
        lexical_candidates=lexical_candidates,
        title_specificity=title_specificity,
    )
    engine = state_of(ctx).engine
    return await run_engine(engine.query, corpus, query, params=params, method="qiter", llm_entities=llm_entities)


@tool("dense_search", READ_ONLY)
async def dense_search(
    corpus: Corpus,
    query: Query,
    ctx: Context[AppState],
    top_n: QIterTopN = _DEFAULTS.top_n,
) -> RetrievalResult:
    """Plain dense retrieval: the top_n chunks by embedding similarity to the query, no graph.
    Good for single-hop lookups; q_iter is better when the answer needs a bridge entity."""
    engine = state_of(ctx).engine
    return await run_engine(engine.query, corpus, query, params=make_params(top_n=top_n), method="dense")
