"""`research`: a prompt a user picks to have a question answered from a corpus the way this server
works best: q_iter first, read_document around the passages the answer rests on, and an answer
that cites each claim so the user can check it. It is the server's instructions made one action:
Claude Desktop and Cursor show prompts to the user, never the instructions to the model."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from cuerag.config import MAX_QUERY_CHARS

NAME = "research"
TITLE = "Research a question"
DESCRIPTION = "Answer a question from a corpus: multi-hop retrieval, then the sources read, cited."


def research(
    corpus: Annotated[str, Field(max_length=64, description="The corpus to search (list_corpora).")],
    question: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to find out.")],
) -> str:
    """The user message that drives the research."""
    return f"""Answer this question from the corpus "{corpus}":

{question}

1. Call q_iter with corpus="{corpus}" and the question as the query. Each passage says why it came
   back (the path through the graph, a title the question names, a title link, or the dense fill).
2. If a hop is missing (no passage holds a fact the answer needs), call q_iter again with a query
   for that fact, naming the last entity the paths reached.
3. For each passage the answer rests on, call read_document with its chunk_id to read around it,
   and check the passage says what you will claim.
4. Answer briefly. Cite each claim with its source, section and pages and the document URI, as each
   passage's citation gives them. Say what the corpus does not answer rather than guess."""


SENSEMAKING = "sensemaking"
SENSEMAKING_TITLE = "Make sense of a corpus"
SENSEMAKING_DESCRIPTION = "A broad question answered theme by theme: map over the themes, then reduce, cited."


def sensemaking(
    corpus: Annotated[str, Field(max_length=64, description="The corpus to survey (list_corpora).")],
    question: Annotated[
        str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The broad question to answer.")
    ],
) -> str:
    """The user message that drives a map-reduce over the corpus's themes."""
    return f"""Answer this broad question from the corpus "{corpus}", theme by theme:

{question}

1. Call global_search with corpus="{corpus}" and the question: it returns cited statements grouped
   by theme and the share of the corpus's documents they cover.
2. Map: call themes with corpus="{corpus}" (level 0) to see every broad theme. For each theme that
   may bear on the question (its title, its size), open it (themes with theme_id) and note, in a
   line or two, what its evidence says about the question, with the doc_id of each point. Open its
   children where a theme is broad and only part of it matters. Skip themes that do not bear on it.
3. Reduce: merge the notes into one answer, the most important points first, grouping what several
   themes say alike. Cite each point with its doc_id; read_document (with a chunk_id) where a
   statement needs its context.
4. Say which themes you looked at and what share of the corpus they hold, so the reader knows what
   the answer covers and what it does not."""
