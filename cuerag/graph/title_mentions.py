"""Title mentions: the chunks whose titles a text names, as a wiki's hyperlinks would.

A bridge question ("Who directed the film shot in Leland in 1986?") needs a passage that shares
little wording with the question (the film's own page); the passage found first names it
("... Maximum Overdrive was shot in Leland ..."). Matching the corpus's titles against a text's
words recovers that link without an LLM, and a question that names a title outright points at
that passage directly.

Matching ignores letter case and accents, in questions and passages alike: a typed question in
lower case names the same titles as the same question capitalised. What keeps a title that is
also a common word ("Brand", "Python") from pulling its page in is not its case but how specific
it is in the corpus (`TitleSpecificity`): a title that many documents write carries little
evidence, one that few write carries much. That is measured on the corpus itself, so it holds for
any language and any naming convention.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cuerag.text.entities import fold_accents

_TOKEN = re.compile(r"\w+|[.!?]")
_SENTENCE_END = frozenset(".!?")
_OPEN, _CLOSE = "([", ")]"
_MAX_WORDS = 10  # longer titles are rare and would make every lookup slower

Key = tuple[str, ...]

# The most chunks one title or link leads to: a long document's many chunks share its title, and
# the walk ranks every unit of every chunk a hop leads to, for each kept path at each depth.
MAX_TARGET_CHUNKS = 64


def _words(text: str) -> tuple[Key, frozenset[int]]:
    """The words of a text, case and accents folded ("Aschenbrödel" meets "aschenbrodel"), and
    the positions where a sentence starts. A stop after a single letter is an initial ("F.C.",
    "J. R. R."), not a sentence end."""
    words: list[str] = []
    starts = {0}
    for token in _TOKEN.findall(fold_accents(text).casefold()):
        if token not in _SENTENCE_END:
            words.append(token)
        elif words and len(words[-1]) > 1:
            starts.add(len(words))
    return tuple(words), frozenset(starts)


def folded_words(text: str) -> Key:
    """A text's words as titles are matched: case and accents folded."""
    return _words(text)[0]


def title_keys(title: str) -> set[Key]:
    """The ways a text may name a title: in full, and without a trailing qualifier in brackets
    ("Lover Come Back (1961 film)" is written "Lover Come Back"); words folded."""
    return _title_forms(title)[1]


def _title_forms(title: str) -> tuple[Key, set[Key]]:
    """The title's own words, and its keys (see `title_keys`)."""
    full = _words(title)[0]
    keys = (full, _words(_unqualified(title))[0])
    return full, {k for k in keys if k and len(k) <= _MAX_WORDS and len("".join(k)) > 1}


@dataclass(frozen=True)
class Named:
    """A title a text names: which one (`title`, a position in the index's titles) and the
    chunks that carry it."""

    title: int
    chunks: list[int]


class _Carriers:
    """The chunks a key names: those whose full title it is, and those whose title it is once
    the qualifier is dropped. A mention names the first kind when there is one ("Charmed" is the
    series' page, not "Charmed (season 1)")."""

    def __init__(self, title: int) -> None:
        self.title = title
        self.exact: list[int] = []
        self.qualified: list[int] = []


def _unqualified(title: str) -> str:
    """The title without a trailing part in brackets, which qualifies it ("Lover Come Back (1961
    film)", "open() [C API]"), where texts often leave it out. Found by looking back from the end:
    the regular expression that did this (`\\s*[(\\[][^()\\[\\]]*[)\\]]\\s*$`, searched) was tried
    at every blank and bracket, quadratic in a title's length, and a document may carry a title of
    any length (100,000 blanks: minutes, on every load of the corpus's titles)."""
    body = title.rstrip()
    if not body.endswith(tuple(_CLOSE)):
        return title
    opening = max(body.rfind(c) for c in _OPEN)
    inside = body[opening + 1 : -1]
    if opening < 0 or any(c in inside for c in _CLOSE):
        return title
    return body[:opening].rstrip()


class TitleIndex:
    """Chunk titles by key, for finding the chunks a text names."""

    def __init__(self, titles: Sequence[str]) -> None:
        self._keys: dict[Key, _Carriers] = {}
        self._own: list[set[Key]] = []  # each chunk's keys, for leaving its own title out
        for c, title in enumerate(titles):
            full, keys = _title_forms(title)
            self._own.append(keys)
            for key in keys:
                carriers = self._keys.get(key)
                if carriers is None:
                    carriers = self._keys[key] = _Carriers(len(self._keys))
                (carriers.exact if key == full else carriers.qualified).append(c)
        self._longest = max((len(k) for k in self._keys), default=0)
        self._first_words = {k[0] for k in self._keys}

    @property
    def size(self) -> int:
        """How many distinct title keys there are (the range of `Named.title`)."""
        return len(self._keys)

    def named_in(
        self, text: str, *, exclude_titles_of: int | None = None, per_title: int = MAX_TARGET_CHUNKS
    ) -> list[Named]:
        """The titles the text names, in order of first mention, each with the chunks that carry
        it (at most `per_title`: a long document's many chunks share its title). A chunk's own
        title (`exclude_titles_of`) does not count, nor do the other chunks that share it."""
        words, starts = _words(text)
        own = self._own[exclude_titles_of] if exclude_titles_of is not None else set()
        seen: set[int] = set()
        groups: set[tuple[int, ...]] = set()
        named: list[Named] = []
        for i in range(len(words)):
            if words[i] not in self._first_words:
                continue
            for n in range(1, min(self._longest, len(words) - i) + 1):
                if n > 1 and i + n - 1 in starts:
                    break  # a title does not run across sentences
                carriers = self._keys.get(words[i : i + n])
                if carriers is None or carriers.title in seen:
                    continue
                seen.add(carriers.title)
                chunks = self._carried(carriers, exclude_titles_of, own)[:per_title]
                if chunks and tuple(chunks) not in groups:  # one page, named by two of its keys
                    groups.add(tuple(chunks))
                    named.append(Named(carriers.title, chunks))
        return named

    def _carried(self, carriers: _Carriers, exclude: int | None, own: set[Key]) -> list[int]:
        """The chunks a matched key names, less the excluded chunk and those sharing its title."""
        for kind in (carriers.exact, carriers.qualified):
            chunks = [c for c in kind if c != exclude and not own & self._own[c]]
            if chunks:
                return chunks
        return []


class TitleSpecificity:
    """How specific each title is in a corpus, from the documents whose text names it. A title
    that many documents write (a common phrase such as "floating point numbers", a common word
    such as "brand", a hub such as a language or a country) says little about which passage a
    text means; one that few write points at its page. Letter case plays no part."""

    def __init__(self, index: TitleIndex, texts: Sequence[str], docs: Sequence[str]) -> None:
        naming: dict[int, set[str]] = {}
        for c, text in enumerate(texts):
            for named in index.named_in(text, exclude_titles_of=c, per_title=1):
                naming.setdefault(named.title, set()).add(docs[c])
        self._documents = len(set(docs))
        self._naming = {title: len(d) for title, d in naming.items()}

    def naming_documents(self, title: int) -> int:
        """How many documents other than the title's own name it."""
        return self._naming.get(title, 0)

    def of(self, title: int, *, besides: int = 0) -> float:
        """In (0, 1]: the share of the corpus's documents that do not name the title: 1 for a title
        no other document names, half for one that half the documents name. `besides`: that
        many of the naming documents are the reason it is asked (the passage a link is followed
        from names the title, so that mention says nothing of how common the title is)."""
        n = self._documents
        if n <= 1:
            return 1.0
        naming = max(self.naming_documents(title) - besides, 0)
        return max(1.0 - naming / n, 1.0 / n)
