"""LLM use at query time, as in the paper's text: entities read from the question by the LLM (NER
is the fallback), and a short answer written from the retrieved chunks.

The answer prompt follows the paper's: the passages, then the question repeated after them (a
small model loses a question asked only before a long context), and the answer as short as
possible so that it can be scored against the gold answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from cuerag.errors import LLMError
from cuerag.llm.client import LLM, LLMUsage
from cuerag.llm.json_reading import string_list, without_thinking
from cuerag.retrieval.explain import ExplainedHit
from cuerag.retrieval.results import ChunkHit, Method, QIterTrace
from cuerag.text.tools import TextTools

ENTITY_SYSTEM_PROMPT = """List the named things a question is about: people, places, organisations, \
works, events, dates. Copy each name as the question writes it. Answer with a JSON list of strings \
and nothing else; an empty list when there are none.

Example.
Question: Which river flows through the town where Agnes Dorr was born?
Answer: ["Agnes Dorr"]"""

ANSWER_SYSTEM_PROMPT = """You answer questions from the passages you are given. Use only what the \
passages say. Reply with the answer alone, as short as possible: a name, a date, a number, or yes \
or no. No explanation, no full sentence. If the passages do not hold the answer, give your best guess."""

_MAX_ENTITY_TOKENS = 128
_MAX_ANSWER_TOKENS = 64


class AnswerResult(BaseModel):
    """An answer, the chunks it was written from, and what the LLM cost per stage."""

    corpus: str
    question: str
    answer: str
    method: Method
    chunks: list[ExplainedHit]  # the context the answer was written from, best first, each with its reason
    trace: QIterTrace | None = None
    llm_usage: dict[str, LLMUsage]  # per stage: query_entities (if asked), answer
    elapsed_ms: float


def llm_query_entities(llm: LLM, question: str) -> tuple[list[str], LLMUsage]:
    """The entities the LLM reads in the question; [] when the call fails or says nothing usable
    (the caller then falls back to NER)."""
    user = f"Question: {question}\nAnswer:"
    try:
        completion = llm.complete(ENTITY_SYSTEM_PROMPT, user, max_tokens=_MAX_ENTITY_TOKENS)
    except LLMError:
        return [], LLMUsage()
    names = [n for n in dict.fromkeys(string_list(completion.text)) if len(n) <= 200]
    return names, completion.usage()


def answer_prompt(question: str, chunks: Sequence[ChunkHit], text: TextTools, *, context_tokens: int) -> str:
    """The user message: numbered passages, best first, within the context budget, then the
    question again."""
    parts: list[str] = []
    left = context_tokens
    for n, chunk in enumerate(chunks, start=1):
        passage = f"[{n}] {chunk.title}\n{chunk.text}" if chunk.title else f"[{n}] {chunk.text}"
        tokens = text.count_tokens(passage)
        if tokens > left:
            if left < 32:
                break
            passage = text.encoding.decode(text.encoding.encode(passage, disallowed_special=())[:left])
            tokens = left
        parts.append(passage)
        left -= tokens
    context = "\n\n".join(parts)
    return f"Question: {question}\n\nPassages:\n{context}\n\nQuestion: {question}\nAnswer:"


def generate_answer(
    llm: LLM, question: str, chunks: Sequence[ChunkHit], text: TextTools, *, context_tokens: int
) -> tuple[str, LLMUsage]:
    """A short answer from the chunks. LLM failures propagate as LLMError: the caller asked for an
    answer, and an empty one would be mistaken for the model's."""
    user = answer_prompt(question, chunks, text, context_tokens=context_tokens)
    completion = llm.complete(ANSWER_SYSTEM_PROMPT, user, max_tokens=_MAX_ANSWER_TOKENS)
    # Reasoning models may think aloud first; the answer is what follows.
    said = without_thinking(completion.text)
    answer = said.splitlines()[0].strip() if said else ""
    return answer, completion.usage()
