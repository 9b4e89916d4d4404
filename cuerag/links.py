"""Title links: the chunks whose titles a text names, as a wiki's hyperlinks would.

A bridge question ("Who directed the film shot in Leland in 1986?") needs a passage that shares
little wording with the question (the film's own page); the passage found first names it
("... Maximum Overdrive was shot in Leland ..."). Matching the corpus's titles against a text's
words recovers that link without an LLM, and a question that names a title outright points at
that passage directly.

Matching keeps case, so a title that is also a common word ("Brand") links only where the text
writes it as a name, and a one-word title does not count at the start of a sentence, where every
word is capitalised. A text written all in lower case (a typed query) is matched without case,
on titles of two or more words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

_TOKEN = re.compile(r"\w+|[.!?]")
_SENTENCE_END = frozenset(".!?")
_TRAILING_PARENS = re.compile(r"\s*\([^()]*\)\s*$")
_MAX_WORDS = 10  # longer titles are rare and would make every lookup slower

Key = tuple[str, ...]


def _words(text: str) -> tuple[Key, frozenset[int]]:
    """The words of a text with accents folded ("Aschenbrödel" meets "Aschenbrodel"), and the
    positions of the words that start a sentence. A stop after a single letter is an initial
    ("F.C.", "J. R. R."), not a sentence end."""
    folded = unicodedata.normalize("NFKD", text)
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    words: list[str] = []
    starts = {0}
    for token in _TOKEN.findall(folded):
        if token not in _SENTENCE_END:
            words.append(token)
        elif words and len(words[-1]) > 1:
            starts.add(len(words))
    return tuple(words), frozenset(starts)


def title_keys(title: str) -> set[Key]:
    """The ways a text may name a title: in full, and without a trailing qualifier in
    parentheses ("Lover Come Back (1961 film)" is written "Lover Come Back")."""
    keys = {_words(title)[0], _words(_TRAILING_PARENS.sub("", title))[0]}
    return {
        k
        for k in keys
        if k
        and len(k) <= _MAX_WORDS
        and not k[0][0].islower()  # a name starts with a capital or a digit
        and len("".join(k)) > 1
    }


class TitleIndex:
    """Chunk titles by key, for finding the chunks a text names."""

    def __init__(self, titles: Sequence[str]) -> None:
        self._cased: dict[Key, list[int]] = {}
        self._folded: dict[Key, list[int]] = {}
        self._own: list[set[Key]] = []
        for c, title in enumerate(titles):
            keys = title_keys(title)
            self._own.append(keys)
            for key in keys:
                self._cased.setdefault(key, []).append(c)
                if len(key) > 1:
                    self._folded.setdefault(tuple(w.casefold() for w in key), []).append(c)
        self._longest = max((len(k) for k in self._cased), default=0)
        self._first_words = {k[0] for k in self._cased} | {k[0] for k in self._folded}

    def named_in(self, text: str, *, exclude_titles_of: int | None = None, limit: int = 64) -> list[int]:
        """Chunks whose title the text names, in order of first mention, at most `limit` (a title
        shared by a long document's many chunks must not make every query rerank them all). A
        chunk's own title (`exclude_titles_of`) does not count: the chunks that share it are left
        out."""
        words, starts = _words(text)
        table = self._cased
        if text.islower():
            words, table = tuple(w.casefold() for w in words), self._folded
        found: dict[int, None] = {}
        for i, word in enumerate(words):
            if word not in self._first_words:
                continue
            for n in range(1, min(self._longest, len(words) - i) + 1):
                if n > 1 and i + n - 1 in starts:
                    break  # a title does not run across sentences
                key = words[i : i + n]
                if key in table and not (n == 1 and i in starts):
                    found.update(dict.fromkeys(table[key]))
        if exclude_titles_of is None:
            return list(found)[:limit]
        own = self._own[exclude_titles_of]
        return [c for c in found if c != exclude_titles_of and not own & self._own[c]][:limit]
