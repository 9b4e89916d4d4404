"""`list_corpora`: what can be searched, with the operator's word on what each corpus holds."""

from __future__ import annotations

from collections.abc import Mapping

from mcp.server.mcpserver import Context
from pydantic import BaseModel

from cuerag import CorpusInfo
from tools.common import READ_ONLY, AppState, run_engine, state_of, tool

# The tools whose descriptions name the described corpora: the one that lists them and the two an
# agent picks first for a question. Each added character is read by every client in tools/list.
DESCRIBED_IN = frozenset({"list_corpora", "q_iter", "global_search"})
MAX_NOTE_CHARS = 600


class ListedCorpus(CorpusInfo):
    description: str | None = None  # the operator's (`--describe NAME=TEXT`)


class CorporaResult(BaseModel):
    corpora: list[ListedCorpus]


def corpus_note(descriptions: Mapping[str, str]) -> str:
    """The sentence a tool description gains from the operator's corpus descriptions, cut at
    MAX_NOTE_CHARS (list_corpora has them whole)."""
    if not descriptions:
        return ""
    said = (
        f"{name}: {text}" + ("" if text.endswith((".", "!", "?")) else ".")
        for name, text in sorted(descriptions.items())
    )
    note = "Corpora: " + " ".join(said)
    return note if len(note) <= MAX_NOTE_CHARS else note[: MAX_NOTE_CHARS - 1].rstrip() + "…"


@tool("list_corpora", "List corpora", READ_ONLY)
async def list_corpora(ctx: Context[AppState]) -> CorporaResult:
    """Lists what can be searched: each corpus, its size and what it holds."""
    state = state_of(ctx)
    engine = state.engine

    def run() -> CorporaResult:
        return CorporaResult(
            corpora=[
                ListedCorpus(**engine.info(name).model_dump(), description=state.corpus_descriptions.get(name))
                for name in engine.corpora()
            ]
        )

    return await run_engine(run)
