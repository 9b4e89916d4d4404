"""How a corpus writes its words, so that a query reads the same whatever its letter case.

NER reads capitals: "which python job mails finance" and "Which Python job mails finance?" give
it different entities, and so Q-Iter different anchors. Before NER, a query is rewritten the way
the corpus writes it: each name the corpus knows (an entity's or a title's words) as the corpus
wrote it, each other word in the form the corpus uses most often inside sentences, and a word the
corpus never uses in lower case. The query's own case is dropped, so any casing of one question
gives NER the same text. No word list is involved: every form comes from the corpus itself.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from cuerag.text.entities import fold_accents

_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"[.!?]\s")
_MAX_PHRASE = 6  # words in the longest name looked up


def _key(word: str) -> str:
    return fold_accents(word).casefold()


class CorpusCasing:
    """The written forms of a corpus's words and names."""

    def __init__(self, texts: Iterable[str], names: Iterable[str]) -> None:
        forms: dict[str, Counter[str]] = {}
        for text in texts:
            # The first word of a sentence is capitalised whatever it is: it says nothing.
            for sentence in _SENTENCE_END.split(text):
                for word in _WORD.findall(sentence)[1:]:
                    forms.setdefault(_key(word), Counter())[word] += 1
        self._words = {key: counts.most_common(1)[0][0] for key, counts in forms.items()}
        self._names: dict[tuple[str, ...], list[str]] = {}
        for name in names:
            words = _WORD.findall(name)
            if 2 <= len(words) <= _MAX_PHRASE:
                self._names.setdefault(tuple(_key(w) for w in words), words)

    def restore(self, query: str) -> str:
        """The query written as the corpus writes it (see the module's notes)."""
        matches = list(_WORD.finditer(query))
        keys = [_key(m.group()) for m in matches]
        written: list[str] = []
        i = 0
        while i < len(matches):
            for n in range(min(_MAX_PHRASE, len(matches) - i), 1, -1):
                name = self._names.get(tuple(keys[i : i + n]))
                if name is not None:
                    written.extend(name)
                    i += n
                    break
            else:
                written.append(self._words.get(keys[i], keys[i]))
                i += 1
        out: list[str] = []
        last = 0
        for match, word in zip(matches, written, strict=True):
            out.append(query[last : match.start()].casefold())
            out.append(word)
            last = match.end()
        out.append(query[last:].casefold())
        return "".join(out)
