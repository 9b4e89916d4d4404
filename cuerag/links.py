"""Title links: the chunks whose titles a text names, as a wiki's hyperlinks would.

A bridge question ("Who directed the film shot in Leland in 1986?") needs a passage that shares
little wording with the question (the film's own page); the passage found first names it
("... Maximum Overdrive was shot in Leland ..."). Matching the corpus's titles against a text's
words recovers that link without an LLM, and a question that names a title outright points at
that passage directly.

Matching keeps case, so a title that is also a common word ("Brand") links only where the text
writes it as a name, and a one-word title does not count at the start of a sentence, where every
word is capitalised. A text written all in lower case (a typed query) is matched without case,
on titles of two or more words. A question (`loose_case`) is typed too: there a title written as
a name ("Reign of Terror", "Monster Trucks (film)": every word capitalised but the small ones,
two words or more besides those) is matched without case, since "during the reign of terror"
still means the name. A title in sentence case ("Political party") is a common phrase, and one
like "The Sun" is one word away from one: both keep their case. Passages are edited text that
capitalises names, so they are matched as written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cuerag.entities import fold_accents

_TOKEN = re.compile(r"\w+|[.!?]")
_SENTENCE_END = frozenset(".!?")
_TRAILING_PARENS = re.compile(r"\s*\([^()]*\)\s*$")
_MAX_WORDS = 10  # longer titles are rare and would make every lookup slower
# Words a name written in title case leaves in lower case ("Reign of Terror", "Ivan the Terrible").
_SMALL_WORDS = frozenset(
    {"a", "al", "an", "and", "ap", "as", "at", "bin", "bint", "but", "by", "da", "das", "de", "dei", "del"}
    | {"della", "der", "des", "di", "do", "dos", "du", "el", "for", "from", "ibn", "in", "into", "la", "le"}
    | {"nor", "of", "on", "or", "over", "the", "to", "upon", "v", "van", "von", "vs", "with", "y", "yet"}
)
_FIRST_ALNUM = re.compile(r"\w")

Key = tuple[str, ...]


def _words(text: str) -> tuple[Key, frozenset[int]]:
    """The words of a text with accents folded ("Aschenbrödel" meets "Aschenbrodel"), and the
    positions of the words that start a sentence. A stop after a single letter is an initial
    ("F.C.", "J. R. R."), not a sentence end."""
    words: list[str] = []
    starts = {0}
    for token in _TOKEN.findall(fold_accents(text)):
        if token not in _SENTENCE_END:
            words.append(token)
        elif words and len(words[-1]) > 1:
            starts.add(len(words))
    return tuple(words), frozenset(starts)


def title_keys(title: str) -> set[Key]:
    """The ways a text may name a title: in full, and without a trailing qualifier in
    parentheses ("Lover Come Back (1961 film)" is written "Lover Come Back")."""
    return _title_forms(title)[1]


def _title_forms(title: str) -> tuple[Key, set[Key]]:
    """The title's own words, and its keys (see `title_keys`)."""
    full = _words(title)[0]
    return full, {k for k in (full, _words(_TRAILING_PARENS.sub("", title))[0]) if _is_name(k)}


def _written_as_name(title: str) -> bool:
    """Every word of the title (split at spaces, so "Schindler's List" and "Chiang Kai-shek" are
    two words each) capitalised or a number, but the small ones, and two words or more besides
    those: "Reign of Terror" is a name, "Political party" and "The Sun" are too close to phrases."""
    big = 0
    for word in title.split():
        first = _FIRST_ALNUM.search(word)
        if first is None:
            continue
        small = word.strip("\"'(),.:;!?").casefold() in _SMALL_WORDS
        if first.group().islower() and not small:
            return False
        big += not small
    return big >= 2


def _is_name(key: Key) -> bool:
    return (
        bool(key)
        and len(key) <= _MAX_WORDS
        and not key[0][0].islower()  # a name starts with a capital or a digit
        and len("".join(key)) > 1
        and (len(key) > 1 or any(ch.isalpha() for ch in key[0]))  # "1986" alone is a year, not a name
    )


def _fold(key: Key) -> Key:
    return tuple(w.casefold() for w in key)


class _Carriers:
    """The chunks a key names: those whose full title it is, and those whose title it is once
    the qualifier is dropped. A mention names the first kind when there is one ("Charmed" is the
    series' page, not "Charmed (season 1)")."""

    def __init__(self) -> None:
        self.exact: list[int] = []
        self.qualified: list[int] = []


class TitleIndex:
    """Chunk titles by key, for finding the chunks a text names."""

    def __init__(self, titles: Sequence[str]) -> None:
        self._cased: dict[Key, _Carriers] = {}
        self._folded: dict[Key, _Carriers] = {}  # titles of two or more words, for lower-case text
        self._names: dict[Key, _Carriers] = {}  # those written as names, for questions
        self._own: list[set[Key]] = []  # each chunk's keys without case, for leaving its title out
        for c, title in enumerate(titles):
            full, keys = _title_forms(title)
            self._own.append({_fold(k) for k in keys})
            name = _written_as_name(_TRAILING_PARENS.sub("", title))
            for key in keys:
                tables = [(self._cased, key)]
                if len(key) > 1:
                    tables.append((self._folded, _fold(key)))
                    if name:
                        tables.append((self._names, _fold(key)))
                for table, k in tables:
                    carriers = table.setdefault(k, _Carriers())
                    (carriers.exact if key == full else carriers.qualified).append(c)
        self._longest = max((len(k) for k in self._cased), default=0)
        self._first_words = {k[0] for k in self._cased} | {k[0] for k in self._folded}

    def named_in(
        self,
        text: str,
        *,
        exclude_titles_of: int | None = None,
        per_title: int = 64,
        loose_case: bool = False,
    ) -> list[list[int]]:
        """The titles the text names, in order of first mention, each as the chunks that carry it
        (at most `per_title`: a long document's many chunks share its title). A chunk's own title
        (`exclude_titles_of`) does not count, nor do the other chunks that share it, whatever
        their case. `loose_case`: the text is a typed question (see the module's notes)."""
        words, starts = _words(text)
        folded = _fold(words)
        # The word sequences to look up and where, in order of preference.
        if text.islower():
            lookups = [(folded, self._folded)]
        else:
            lookups = [(words, self._cased), *([(folded, self._names)] if loose_case else [])]
        own = self._own[exclude_titles_of] if exclude_titles_of is not None else set()
        seen: set[int] = set()
        groups: set[tuple[int, ...]] = set()
        named: list[list[int]] = []
        for i in range(len(words)):
            if words[i] not in self._first_words and folded[i] not in self._first_words:
                continue
            for n in range(1, min(self._longest, len(words) - i) + 1):
                if n > 1 and i + n - 1 in starts:
                    break  # a title does not run across sentences
                if n == 1 and i in starts:
                    continue
                for seq, table in lookups:
                    carriers = table.get(seq[i : i + n])
                    if carriers is None:
                        continue
                    if id(carriers) not in seen:
                        seen.add(id(carriers))
                        chunks = self._carried(carriers, exclude_titles_of, own)[:per_title]
                        if chunks and tuple(chunks) not in groups:  # one title, written two ways
                            groups.add(tuple(chunks))
                            named.append(chunks)
                    break
        return named

    def _carried(self, carriers: _Carriers, exclude: int | None, own: set[Key]) -> list[int]:
        """The chunks a matched key names, less the excluded chunk and those sharing its title."""
        for kind in (carriers.exact, carriers.qualified):
            chunks = [c for c in kind if c != exclude and not own & self._own[c]]
            if chunks:
                return chunks
        return []
