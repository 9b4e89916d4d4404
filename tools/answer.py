"""`answer`: retrieval plus an answer written by the server's LLM, for clients that want the
answer rather than the passages. Listed only when the server has an LLM configured."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from pydantic import Field

from cuerag import make_params
from tools.common import READ_ONLY, AppState, Corpus, Filter, Query, always, run_engine, state_of, tool
from tools.rendering import CompactAnswer, Detail, LinkedAnswer, shaped_answer


# The passages go to the LLM with the question.
@tool("answer", "Answer a question with the server's LLM", READ_ONLY, needs_llm=True, calls_llm=always)
async def answer(
    corpus: Corpus,
    question: Query,
    ctx: Context[AppState],
    method: Annotated[
        Literal["qiter", "dense", "bm25", "hybrid", "ketrag"], Field(description="How the passages are found.")
    ] = "qiter",
    top_n: Annotated[int, Field(ge=1, le=20, description="Chunks the LLM reads.")] = 5,
    llm_entities: Annotated[bool, Field(description="The LLM reads the question's entities.")] = False,
    detail: Detail = "compact",
    filter: Filter = None,
) -> CompactAnswer | LinkedAnswer:
    """The server's LLM answers from the top_n chunks (Q-Iter by default). Returns the answer and
    the chunks it came from, each with why it was retrieved: check the answer against them."""
    engine = state_of(ctx).engine
    params = make_params(top_n=top_n)

    def run() -> CompactAnswer | LinkedAnswer:
        result = engine.answer(corpus, question, params=params, method=method, llm_entities=llm_entities, filter=filter)
        return shaped_answer(result, detail, engine.text)

    return await run_engine(run)
