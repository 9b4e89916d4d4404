"""Titleless variants of an evaluation set: every passage's title replaced by an opaque id, the gold
passages mapped the same way, so a measurement shows what retrieval does without titles to match.

The passages' text is kept as it is (it may still name other passages' subjects, as documents
without wiki titles do); only the title field, which Q-Iter's title links and BM25's title words
read, becomes an id that says nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cuerag.evaluation.questions import QuestionFormat, load_questions
from cuerag.index.sync import load_paths


def opaque_title(position: int) -> str:
    return f"doc-{position:05d}"


def titleless_variant(
    questions_file: Path, corpus_file: Path, fmt: QuestionFormat = "auto"
) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """The corpus as `[{"title": opaque id, "text"}]` and the questions in the simple form
    `[{"question", "gold_titles", "answer", "answers"}]`, gold titles being the gold passages'
    opaque ids (a set whose titles repeat, as MuSiQue's do, is matched passage by passage)."""
    docs = load_paths([corpus_file])
    questions = load_questions(questions_file, docs, fmt)
    opaque: dict[str, str] = {}
    corpus: list[dict[str, str]] = []
    for doc in docs:
        if doc.id in opaque:
            continue
        opaque[doc.id] = opaque_title(len(corpus))
        corpus.append({"title": opaque[doc.id], "text": doc.text})
    variant = [
        {
            "id": q.id,
            "question": q.question,
            "gold_titles": [opaque[d] for d in q.gold_doc_ids],
            "answer": q.answers[0] if q.answers else "",
            "answers": q.answers,
        }
        for q in questions
    ]
    return corpus, variant


def write_titleless(questions_file: Path, corpus_file: Path, out_dir: Path, fmt: QuestionFormat = "auto") -> Path:
    """Write `corpus.json` and `questions.json` of the variant under `out_dir`; returns it."""
    corpus, questions = titleless_variant(questions_file, corpus_file, fmt)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "corpus.json").write_text(json.dumps(corpus, ensure_ascii=False), encoding="utf-8")
    (out_dir / "questions.json").write_text(json.dumps(questions, ensure_ascii=False, indent=1), encoding="utf-8")
    return out_dir
