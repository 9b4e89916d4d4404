"""`q_iter`: the whole CUE-RAG retrieval in one call; `dense_search`: the baseline it beats."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from cuerag import Engine, QIterParams, make_params
from cuerag.config import LexicalWeight, QIterBeam, QIterDepth, QIterK, QIterTopN
from cuerag.retrieval.filters import DocFilter
from cuerag.retrieval.results import Method
from tools.common import READ_ONLY, AppState, Corpus, Filter, Query, always, run_engine, state_of, tool
from tools.rendering import CompactResult, Detail, LinkedResult, shaped_result

# Defaults and ranges come from the one declaration in cuerag.config.
_DEFAULTS = QIterParams()


async def retrieve(
    engine: Engine,
    corpus: str,
    query: str,
    *,
    params: QIterParams,
    method: Method,
    detail: str,
    llm_entities: bool = False,
    filter: DocFilter | None = None,
) -> CompactResult | LinkedResult:
    """Retrieval shaped for the agent: each chunk explained, the trace only at `detail="full"`."""

    def run() -> CompactResult | LinkedResult:
        result = engine.query(corpus, query, params=params, method=method, llm_entities=llm_entities, filter=filter)
        return shaped_result(result, detail, engine.text)

    return await run_engine(run)


# With llm_entities the query goes to the LLM. The lexical channel's candidates are left
# to the CLI and the library with the ablation switches, and its weight is listed only beside the
# step tools (a stepwise walk compares itself with Q-Iter without it): the defaults serve, and each
# listed argument is read by every client on every connection (docs/mcp.md, the tools/list budget).
@tool(
    "q_iter",
    "Multi-hop retrieval",
    READ_ONLY,
    llm_args=("llm_entities",),
    stepwise_args=("lexical_weight",),
    calls_llm=always,
)
async def q_iter(
    corpus: Corpus,
    query: Query,
    ctx: Context[AppState],
    k: QIterK = _DEFAULTS.k,
    depth: QIterDepth = _DEFAULTS.depth,
    beam: QIterBeam = _DEFAULTS.beam,
    top_n: QIterTopN = _DEFAULTS.top_n,
    lexical_weight: LexicalWeight = _DEFAULTS.lexical_weight,
    llm_entities: Annotated[bool, Field(description="An LLM reads the query's entities.")] = False,
    detail: Detail = "compact",
    filter: Filter = None,
) -> CompactResult | LinkedResult:
    """Finds the passages that answer a question, following entities across documents; call it
    first. Each passage comes with its citation and why it came back."""
    params: QIterParams = make_params(
        k=k,
        depth=depth,
        beam=beam,
        top_n=top_n,
        lexical_weight=lexical_weight,
    )
    engine = state_of(ctx).engine
    if llm_entities and not engine.has_llm:
        # The engine's own message names the settings that add an LLM: the operator's fix, not the agent's.
        raise ToolError("this server has no LLM for llm_entities: call q_iter without it (NER reads the entities)")
    return await retrieve(
        engine,
        corpus,
        query,
        params=params,
        method="qiter",
        detail=detail,
        llm_entities=llm_entities,
        filter=filter,
    )


@tool("dense_search", "Dense retrieval", READ_ONLY)
async def dense_search(
    corpus: Corpus,
    query: Query,
    ctx: Context[AppState],
    top_n: QIterTopN = _DEFAULTS.top_n,
    detail: Detail = "compact",
    filter: Filter = None,
) -> CompactResult | LinkedResult:
    """Finds the passages nearest a question by meaning alone: for single-fact lookups."""
    engine = state_of(ctx).engine
    params = make_params(top_n=top_n)
    return await retrieve(engine, corpus, query, params=params, method="dense", detail=detail, filter=filter)
