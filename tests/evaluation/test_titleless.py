"""Titleless variants of an evaluation set: opaque titles, gold passages mapped the same way, and
a variant `cuerag eval` reads back to the same gold passages."""

from __future__ import annotations

import json
from pathlib import Path

from cuerag.evaluation.questions import load_questions
from cuerag.evaluation.titleless import titleless_variant, write_titleless
from cuerag.index.sync import load_paths

CORPUS = [
    {"title": "Alpha", "text": "Alpha is a town on the Beta river."},
    {"title": "Beta", "text": "Beta is a river."},
    {"title": "Gamma", "text": "Gamma is a band."},
    {"title": "Gamma", "text": "Gamma is also a film."},
]


def _write(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_titles_become_opaque_and_gold_follows_the_passage(tmp_path: Path) -> None:
    corpus_file = _write(tmp_path, "c.json", CORPUS)
    paragraphs = [
        {"title": "Gamma", "paragraph_text": "Gamma is also a film.", "is_supporting": True},
        {"title": "Alpha", "paragraph_text": "Alpha is a town on the Beta river.", "is_supporting": True},
        {"title": "Gamma", "paragraph_text": "Gamma is a band.", "is_supporting": False},
    ]
    musique = {"id": "m1", "question": "Which Gamma film?", "answer": "film", "answer_aliases": ["movie"],
               "paragraphs": paragraphs}  # fmt: skip
    corpus, questions = titleless_variant(_write(tmp_path, "q.json", [musique]), corpus_file)
    assert [d["text"] for d in corpus] == [d["text"] for d in CORPUS]  # the text is kept
    titles = [d["title"] for d in corpus]
    assert len(set(titles)) == 4 and not {"Alpha", "Beta", "Gamma"} & set(titles)
    assert not any(name in t for t in titles for name in ("Alpha", "Beta", "Gamma"))
    # The gold passages, matched passage by passage though two share a title.
    by_title = {d["title"]: d["text"] for d in corpus}
    [q] = questions
    assert [by_title[t] for t in q["gold_titles"]] == ["Gamma is also a film.", "Alpha is a town on the Beta river."]
    assert q["question"] == "Which Gamma film?" and q["answers"] == ["film", "movie"]


def test_the_written_variant_reads_back_with_the_same_gold(tmp_path: Path) -> None:
    corpus_file = _write(tmp_path, "c.json", CORPUS[:3])
    hotpot = {
        "_id": "h1",
        "question": "Where is Alpha?",
        "answer": "on the river",
        "supporting_facts": [["Beta", 0], ["Alpha", 0]],
    }
    out = write_titleless(_write(tmp_path, "q.json", [hotpot]), corpus_file, tmp_path / "variant")
    docs = load_paths([out / "corpus.json"])
    [q] = load_questions(out / "questions.json", docs)
    texts = {d.id: d.text for d in docs}
    assert [texts[g] for g in q.gold_doc_ids] == ["Beta is a river.", "Alpha is a town on the Beta river."]
    assert q.answers == ["on the river"]
    # Written the same way twice, so an evaluation reuses the variant's index.
    first = (out / "corpus.json").read_bytes()
    write_titleless(tmp_path / "q.json", corpus_file, tmp_path / "variant")
    assert (out / "corpus.json").read_bytes() == first
