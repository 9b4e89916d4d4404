"""MCP tools: one module per tool, each a typed function thin over the engine.

`TOOLS` is the single registry the server reads; `write=True` marks the tools hidden in read-only
mode, `needs_llm=True` those listed only when the server has an LLM, `calls_llm` those that can send
text to it (open-world when it is remote).
"""

from __future__ import annotations

from tools.answer import answer
from tools.cancel_job import cancel_job
from tools.common import AppState, ToolSpec
from tools.delete_documents import delete_documents
from tools.expand_entity import expand_entity
from tools.get_nodes import get_chunks, get_units
from tools.index_corpus import index_corpus
from tools.job_status import job_status
from tools.link_entities import link_entities
from tools.list_corpora import list_corpora
from tools.list_documents import list_documents
from tools.q_iter import dense_search, q_iter
from tools.read_document import read_document
from tools.search_units import search_units
from tools.themes import global_search, themes

TOOLS: list[ToolSpec] = [
    q_iter,
    dense_search,
    global_search,
    themes,
    answer,
    search_units,
    link_entities,
    expand_entity,
    get_chunks,
    get_units,
    read_document,
    list_corpora,
    list_documents,
    index_corpus,
    job_status,
    cancel_job,
    delete_documents,
]

__all__ = ["TOOLS", "AppState", "ToolSpec"]
