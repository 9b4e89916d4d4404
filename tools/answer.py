"""`answer`: retrieval plus an answer written by the server's LLM, for clients that want the
answer rather than the passages. Listed only when the server has an LLM configured."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from pydantic import Field

from cuerag import AnswerResult, make_params
from tools.common import READ_ONLY, AppState, Corpus, Query, run_engine, state_of, tool


@tool("answer", READ_ONLY, needs_llm=True)
async def answer(
    corpus: Corpus,
    question: Query,
    ctx: Context[AppState],
    method: Annotated[
        Literal["qiter", "dense", "bm25", "hybrid", "ketrag"], Field(description="How the passages are found.")
    ] = "qiter",
    top_n: Annotated[int, Field(ge=1, le=20, description="Chunks given to the LLM as context.")] = 5,
    llm_entities: Annotated[
        bool, Field(description="Have the LLM read the question's entities (NER otherwise).")
    ] = False,
) -> AnswerResult:
    """Answer a question from a corpus: retrieves the top_n chunks (Q-Iter by default), then the
    server's LLM answers from them as briefly as possible. Returns the answer, the chunks it came
    from (cite them), the Q-Iter trace and the LLM's token usage. The answer is only as good as the
    server's model: check it against the chunks."""
    engine = state_of(ctx).engine
    params = make_params(top_n=top_n)
    return await run_engine(engine.answer, corpus, question, params=params, method=method, llm_entities=llm_entities)
