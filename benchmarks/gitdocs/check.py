"""Sanity checks of the hand-written questions against the built corpus (no retrieval involved).

    python benchmarks/gitdocs/check.py SET_DIR

SET_DIR holds what build.py wrote (corpus.json, links.json) and questions.json. Exits 1 on any
violation: a gold title missing or not unique, a bridge or chain hop with no hyperlink, an answer
not in the last gold page or given away by the question, a question naming a later gold page.
"""

import itertools
import json
import re
import sys
from collections import Counter
from pathlib import Path

GOLD_PAGES = {"bridge": 2, "comparison": 2, "chain3": 3}


def identifiers(title: str) -> set[str]:
    """The ways a question could name a manual page: its title, without the section, git-x as git x."""
    base = re.sub(r"\(\d\)$", "", title).strip().lower()
    names = {title.lower(), base, base.replace("-", " ")}
    if base.startswith("git-"):
        names.add("git " + base[4:])
    return names


def occurs(answer: str, text: str) -> bool:
    """A one-word answer as a whole word; a longer one as a substring (case-insensitive)."""
    if re.fullmatch(r"\w+", answer):
        return re.search(rf"\b{re.escape(answer.lower())}\b", text.lower()) is not None
    return answer.lower() in text.lower()


def violations(questions: list[dict], corpus: list[dict], links: dict[str, list[str]]) -> list[tuple[int, str]]:
    by_title: dict[str, list[dict]] = {}
    for page in corpus:
        by_title.setdefault(page["title"], []).append(page)
    bad: list[tuple[int, str]] = []
    for i, q in enumerate(questions):
        gold = q["gold_titles"]
        missing = [t for t in gold if len(by_title.get(t, [])) != 1]
        bad += [(i, f"gold title missing or not unique: {t}") for t in missing]
        if missing:
            continue
        if len(gold) != GOLD_PAGES[q["type"]]:
            bad.append((i, f"{len(gold)} gold pages for a {q['type']} question"))
        pages = [by_title[t][0] for t in gold]
        if q["type"] != "comparison":
            for a, b in itertools.pairwise(p["path"] for p in pages):
                if b not in links[a]:
                    bad.append((i, f"no hyperlink {a} -> {b}"))
            named = [n for t in gold[1:] for n in identifiers(t) if n in q["question"].lower()]
            bad += [(i, f"the question names a later page: {n!r}") for n in named]
            if occurs(q["answer"], q["question"]):
                bad.append((i, "the answer is in the question"))
            if occurs(q["answer"], pages[0]["text"]):
                print(f"note: q{i}'s answer {q['answer']!r} also occurs in its first page {gold[0]}")
        if q["answer"].lower() not in pages[-1]["text"].lower():
            bad.append((i, f"answer not in the last gold page: {q['answer']!r}"))
    return bad


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    questions = json.loads((root / "questions.json").read_text())
    corpus = json.loads((root / "corpus.json").read_text())
    links = json.loads((root / "links.json").read_text())
    bad = violations(questions, corpus, links)
    print(len(questions), "questions", dict(Counter(q["type"] for q in questions)))
    print("pages used:", len({t for q in questions for t in q["gold_titles"]}))
    print("violations:", len(bad))
    for i, why in bad:
        print(f"  q{i}: {why}: {questions[i]['question'][:80]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
