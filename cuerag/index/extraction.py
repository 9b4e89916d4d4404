"""Knowledge units from an LLM, for the chunks hybrid extraction selects (the paper's Algorithm 2).

A chunk goes to the LLM with a prompt asking for self-contained statements; the answer is read
leniently (code fences, prose around the list, trailing commas, an object wrapping the list) and
each unit is checked. A chunk whose answer yields no usable unit, or whose call fails after the
LLM's retries, falls back to sentence splitting: the index is always complete, and the fallbacks
are counted and logged so that a bad model shows up in the report, not in the recall.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from cuerag.errors import LLMRefusedError
from cuerag.llm.client import LLM, LLMUsage
from cuerag.llm.json_reading import is_text, load_lenient_json

log = logging.getLogger(__name__)

# Written for this project. The example is invented so that a model cannot lean on memory of it.
SYSTEM_PROMPT = """You turn a passage into knowledge units: short statements that each make sense \
on their own, read by someone who has never seen the passage.

Rules:
1. One fact per statement, or a few facts that belong together.
2. Replace every pronoun or vague reference ("she", "the club", "this album") with the name it \
stands for, so that no statement depends on another.
3. When the passage says who or what something is, give that description a statement of its own.
4. Copy names, dates and numbers exactly. Add nothing the passage does not say.
5. Answer with a JSON list of strings and nothing else.

Example.
Title: Marl Point Lighthouse
Passage: Marl Point Lighthouse stands on the eastern cape of Quenby Island. It was first lit in \
1871. Its keeper for forty years, Agnes Dorr, later wrote a memoir about the wreck of the Selkie.
Answer:
["Marl Point Lighthouse is a lighthouse on the eastern cape of Quenby Island.", \
"Marl Point Lighthouse was first lit in 1871.", \
"Agnes Dorr was the keeper of Marl Point Lighthouse for forty years.", \
"Agnes Dorr wrote a memoir about the wreck of the Selkie."]"""

USER_TEMPLATE = "Title: {title}\nPassage: {text}\nAnswer:"

# Bounds on one unit: shorter is a fragment, longer is a copied paragraph, not a statement.
MIN_UNIT_CHARS = 8
MAX_UNIT_CHARS = 1000
MAX_UNITS = 200
_LIST_KEYS = ("units", "knowledge_units", "statements", "facts", "items")
_TEXT_KEYS = ("text", "unit", "statement", "fact", "content")
_LETTER = re.compile(r"[^\W\d_]")


def parse_units(answer: str) -> list[str]:
    """The knowledge units in an LLM's answer, or [] when there are none worth keeping.

    Accepts a JSON list of strings, possibly fenced or surrounded by prose, with the usual small
    syntax slips (repaired by json_repair); an object holding the list under a common key; list
    items that are objects with a text field. Drops items that are not statements: too short,
    too long, no letters. Keeps the first of duplicates."""
    data = load_lenient_json(answer)
    if isinstance(data, dict):
        data = next((data[k] for k in _LIST_KEYS if isinstance(data.get(k), list)), None)
    if not isinstance(data, list):
        return []
    units: dict[str, None] = {}  # ordered set
    for item in data:
        if isinstance(item, dict):
            item = next((item[k] for k in _TEXT_KEYS if isinstance(item.get(k), str)), None)
        if not is_text(item):
            continue
        text = " ".join(item.split())
        if MIN_UNIT_CHARS <= len(text) <= MAX_UNIT_CHARS and _LETTER.search(text):
            units.setdefault(text)
            if len(units) == MAX_UNITS:
                break
    return list(units)


@dataclass(frozen=True)
class ChunkExtraction:
    """The units of one chunk, and whether they came from the LLM or the fallback."""

    units: list[str]
    from_llm: bool
    usage: LLMUsage
    problem: str = ""


@dataclass(frozen=True)
class ChunkText:
    title: str
    text: str


class UnitExtractor:
    """Runs the extraction prompt over many chunks with bounded concurrency."""

    def __init__(self, llm: LLM, *, sentences: Callable[[str], list[str]], concurrency: int, max_tokens: int) -> None:
        self._llm = llm
        self._sentences = sentences
        self._concurrency = concurrency
        self._max_tokens = max_tokens

    def extract_one(self, chunk: ChunkText) -> ChunkExtraction:
        """The chunk's units. A request the endpoint refuses, an answer cut off at max_tokens or
        one with no usable unit falls back to sentences; an LLM that cannot be reached or used at
        all (LLMError) stops the run, which a rerun resumes from the cache."""
        user = USER_TEMPLATE.format(title=chunk.title or "(untitled)", text=chunk.text)
        try:
            completion = self._llm.complete(SYSTEM_PROMPT, user, max_tokens=self._max_tokens)
        except LLMRefusedError as exc:
            return self._fallback(chunk, LLMUsage(), str(exc))
        if completion.truncated:
            # The last unit is cut and every fact after it is missing: the sentences are better.
            return self._fallback(chunk, completion.usage(), f"answer cut off at {self._max_tokens} tokens")
        units = parse_units(completion.text)
        if not units:
            excerpt = " ".join(completion.text.split())[:120]
            return self._fallback(chunk, completion.usage(), f"no usable units in {excerpt!r}")
        return ChunkExtraction(units, from_llm=True, usage=completion.usage())

    def _fallback(self, chunk: ChunkText, usage: LLMUsage, problem: str) -> ChunkExtraction:
        return ChunkExtraction(self._sentences(chunk.text), from_llm=False, usage=usage, problem=problem)

    def extract(
        self, chunks: Sequence[ChunkText], progress: Callable[[int, int], None] | None = None
    ) -> list[ChunkExtraction]:
        """Units for every chunk, in input order. Never raises for one chunk's failure."""
        results: list[ChunkExtraction] = []
        with ThreadPoolExecutor(max_workers=self._concurrency, thread_name_prefix="cuerag-llm") as pool:
            for n, result in enumerate(pool.map(self.extract_one, chunks), start=1):
                if not result.from_llm:
                    log.warning("LLM extraction fell back to sentences for chunk %d: %s", n - 1, result.problem)
                results.append(result)
                if progress is not None:
                    progress(n, len(chunks))
        return results
