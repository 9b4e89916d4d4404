"""Question files in the benchmark forms and their gold passages: HotpotQA and 2WikiMultiHopQA
official (`supporting_facts`), MuSiQue official (`paragraphs` with `is_supporting`), and the simple
form `[{"question", "gold_titles", "answer"?}]`. Gold passages are matched to the corpus by title
where titles are unique, by title and text otherwise."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from cuerag.errors import InputError
from cuerag.ingest.documents import Document, content_id

QuestionFormat = Literal["auto", "hotpotqa", "2wiki", "musique", "simple"]


class Question(BaseModel):
    id: str
    question: str
    gold_doc_ids: list[str]
    answers: list[str] = []


def detect_format(record: dict[str, Any]) -> QuestionFormat:
    if "paragraphs" in record:
        return "musique"
    if "supporting_facts" in record:
        return "2wiki" if "evidences" in record else "hotpotqa"
    if "gold_titles" in record:
        return "simple"
    raise InputError(
        f"unknown question format (keys: {sorted(record)}); "
        "give the format explicitly: hotpotqa, 2wiki, musique or simple"
    )


def load_questions(path: Path, corpus: Sequence[Document], fmt: QuestionFormat = "auto") -> list[Question]:
    """Questions with their gold passages resolved to corpus document ids."""
    if not path.exists():
        raise InputError(f"question file not found: {path}")
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a valid JSON question file ({exc})") from exc
    if not isinstance(records, list) or not records:
        raise InputError(f"{path}: expected a non-empty list of questions")
    corpus_ids = {d.id for d in corpus}
    by_title: dict[str, list[str]] = {}
    for doc in corpus:
        by_title.setdefault(doc.title, []).append(doc.id)

    def by_name(title: str, where: str) -> str:
        ids = by_title.get(title)
        if not ids:
            raise InputError(f"{where}: gold passage {title!r} is not in the corpus")
        return ids[0]

    questions = []
    for i, rec in enumerate(records):
        kind = fmt if fmt != "auto" else detect_format(rec)
        where = f"{path.name}[{i}]"
        qid = str(rec.get("id", rec.get("_id", i)))
        if kind == "musique":
            gold = []
            for p in rec["paragraphs"]:
                if p.get("is_supporting"):
                    did = content_id(p["title"].strip(), p["paragraph_text"])
                    gold.append(did if did in corpus_ids else by_name(p["title"], where))
            answers = [rec.get("answer", ""), *rec.get("answer_aliases", [])]
        elif kind in ("hotpotqa", "2wiki"):
            titles = list(dict.fromkeys(t for t, _ in rec["supporting_facts"]))
            gold = [by_name(t, where) for t in titles]
            answers = [rec.get("answer", "")]
        else:
            gold = [by_name(t, where) for t in rec["gold_titles"]]
            answers = [rec.get("answer", ""), *rec.get("answers", [])]  # the answer, then any aliases
        questions.append(
            Question(
                id=qid,
                question=rec["question"],
                gold_doc_ids=list(dict.fromkeys(gold)),
                answers=list(dict.fromkeys(a for a in answers if a)),
            )
        )
    return questions
