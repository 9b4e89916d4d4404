"""The same facts in both channels (issue 31): each hit's citation (source, section, pages) and its
document's resource URI are in a result's text and in its structured content, for retrieval and
answers, at either detail. Claude Code and Codex hand the model only the structured content,
claude.ai and others only the text, so a fact in one channel alone is lost to some clients.

Built from engine results made here (a PDF-like citation with pages and sections, and an id no
URI can carry); tests/server/test_mcp_documents.py checks the same through a real client."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from cuerag import AnswerResult, LLMUsage
from cuerag.graph.citations import Citation
from cuerag.retrieval.explain import ExplainedHit, ExplainedResult, HitReason
from tools.rendering import render_text, shaped_answer, shaped_result
from tools.resources import document_uri

CORPUS = "papers"
CITED = ExplainedHit(
    chunk_id="c1",
    doc_id="reports/annual 2024.pdf",
    title="Annual report",
    text="Revenue grew by a tenth.",
    score=0.91,
    source="graph",
    why=HitReason(kind="path", text="reached through Revenue", brief="via Revenue"),
    citation=Citation(
        source="reports/annual 2024.pdf", doc_id="reports/annual 2024.pdf", section=["Finance", "Revenue"], pages=[7, 8]
    ),
)
UNLINKABLE = ExplainedHit(
    chunk_id="c2",
    doc_id="../escape",  # a JSON record may carry any id; no URI can be read back for it
    title="Stray",
    text="A stray record.",
    score=0.5,
    source="dense",
    why=HitReason(kind="dense", text="dense fill"),
)
RETRIEVED = ExplainedResult(corpus=CORPUS, query="revenue?", method="qiter", chunks=[CITED, UNLINKABLE], elapsed_ms=3)
ANSWERED = AnswerResult(
    corpus=CORPUS,
    question="revenue?",
    answer="It grew by a tenth.",
    method="qiter",
    chunks=[CITED, UNLINKABLE],
    llm_usage={"answer": LLMUsage(calls=1, prompt_tokens=10, completion_tokens=5)},
    elapsed_ms=3,
)
FACTS = ("reports/annual 2024.pdf", "Finance", "Revenue", "7", "8")
URI = document_uri(CORPUS, "reports/annual 2024.pdf")


def shaped(kind: str, detail: str) -> BaseModel:
    return shaped_result(RETRIEVED, detail) if kind == "retrieval" else shaped_answer(ANSWERED, detail)


def cite_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("cite: ")]


@pytest.mark.parametrize("detail", ["compact", "full"])
@pytest.mark.parametrize("kind", ["retrieval", "answer"])
def test_each_hit_has_its_citation_and_uri_in_both_channels(kind: str, detail: str) -> None:
    result = shaped(kind, detail)
    structured: dict[str, Any] = result.model_dump(mode="json")
    first, stray = structured["chunks"]
    assert first["uri"] == URI == "cuerag://papers/documents/reports/annual%202024.pdf"
    assert (first["citation"]["source"], first["citation"]["section"], first["citation"]["pages"]) == (
        "reports/annual 2024.pdf",
        ["Finance", "Revenue"],
        [7, 8],
    )
    assert stray["uri"] is None  # no resource link for it either (tools/resources.py)
    text = render_text(result)
    # One cite line per hit that has something to cite, with every fact the structured hit holds.
    (line,) = cite_lines(text)
    assert line == f"cite: reports/annual 2024.pdf › Finance › Revenue, p. 7, 8 · {URI}"
    for fact in FACTS:
        assert fact in line
    assert "Stray" in text and "../escape" in text  # still listed, with nothing to cite


def test_a_compact_hit_without_a_path_carries_no_empty_path() -> None:
    """2Wiki's median compact q_iter result was 1,506 tokens on the structured channel, over the
    1,500 bar: hits no kept path reached carried `"path": []` beside a `why` saying so."""
    stray = shaped("retrieval", "compact").model_dump(mode="json")["chunks"][1]
    assert "path" not in stray and "more" not in stray


def test_the_text_is_read_not_json_at_full_detail() -> None:
    """At detail="full" an answer's text was the JSON dump; now it reads as the compact one does,
    the reasons whole, and the structured content keeps the rest."""
    text = render_text(shaped("answer", "full"))
    assert text.startswith("answer: It grew by a tenth.")
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert "reached through Revenue" in render_text(shaped("retrieval", "full"))
    assert "via Revenue" in render_text(shaped("retrieval", "compact"))


def test_a_long_passage_is_cut_in_tokens_with_where_the_rest_is_in_both_channels() -> None:
    """Issue 30, item 6: five 1,200-token chunks were 18,876 characters of compact text, and as
    much again as structured content. A compact passage is cut at COMPACT_TEXT_TOKENS (cl100k) at a
    word; the hit says which characters of the document are left and how to read them."""
    from cuerag.text.tools import TextTools
    from tools.rendering import COMPACT_TEXT_SLACK, COMPACT_TEXT_TOKENS

    words = " ".join(f"word{n}" for n in range(1_500))
    long = CITED.model_copy(
        update={
            "text": words,
            "citation": CITED.citation.model_copy(update={"start": 1_000, "end": 1_000 + len(words)}),  # type: ignore[union-attr]
        }
    )
    result = ExplainedResult(corpus=CORPUS, query="q", method="qiter", chunks=[long, UNLINKABLE], elapsed_ms=1)
    text_tools = TextTools()
    compact = shaped_result(result, "compact", text_tools)
    hit, short = compact.model_dump(mode="json")["chunks"]
    assert hit["text"].endswith(" …") and words.startswith(hit["text"].removesuffix(" …"))
    assert text_tools.count_tokens(hit["text"]) <= COMPACT_TEXT_TOKENS + 2
    kept = len(hit["text"].removesuffix(" …"))
    assert hit["more"] == {"chars": len(words) - kept, "start": 1_000 + kept, "end": 1_000 + len(words)}
    assert "more" not in short and short["text"] == UNLINKABLE.text  # a short passage is whole
    assert f'read_document(doc_id="reports/annual 2024.pdf", start={1_000 + kept})' in render_text(compact)
    # detail="full" gives the whole passage.
    assert shaped_result(result, "full", text_tools).model_dump(mode="json")["chunks"][0]["text"] == words
    # A passage just past the cut is whole: cutting it would leave a sentence for another call.
    nearly = " ".join(f"word{n}" for n in range(84))
    assert COMPACT_TEXT_TOKENS < text_tools.count_tokens(nearly) <= COMPACT_TEXT_TOKENS + COMPACT_TEXT_SLACK
    whole = ExplainedResult(
        corpus=CORPUS, query="q", method="qiter", chunks=[CITED.model_copy(update={"text": nearly})], elapsed_ms=1
    )
    (shown,) = shaped_result(whole, "compact", text_tools).model_dump(mode="json")["chunks"]
    assert shown["text"] == nearly and "more" not in shown


def test_a_document_window_reads_as_text_with_where_the_next_one_starts() -> None:
    """Issue 31: document text arrived JSON-escaped in both channels, and a read past the clients'
    limits had no next pointer. The text channel gives the text as it is, after one line of where
    it is; both channels say where the next window starts."""
    from cuerag.graph.document_text import DocumentText

    body = 'He said "yes".\nThen left.'
    where = {"doc_id": "a.md", "title": "A", "source": "notes/a.md", "start": 0, "end": 26}
    window = DocumentText(text=body, total_chars=90, next_start=26, **where)
    text = render_text(window)
    head, shown = text.split("\n\n", 1)
    assert shown == body  # no escaping
    assert "characters 0-26 of 90" in head and 'read_document(doc_id="a.md", start=26)' in head


def test_an_index_report_reads_as_a_few_lines_naming_every_failure() -> None:
    """The text channel of index_corpus was the report's JSON: two copies of up to 100 paths and
    every stage's counters, for a model that sees only the text to learn a folder was indexed."""
    from cuerag.index.report import IndexReport, ThemesReport
    from cuerag.index.report_bounds import count_files, cut_lists
    from cuerag.ingest.artefacts import LeftOut
    from cuerag.ingest.folders import FileOutcome

    added = [FileOutcome(path=f"notes/n{i:03}.md") for i in range(150)]
    report = IndexReport(
        corpus="notes",
        documents_added=150,
        added_doc_ids=[f.path for f in added[:100]],
        chunks_added=300,
        units_added=1200,
        entities_added=1,
        elapsed_seconds=42.0,
        added=added,
        skipped=[FileOutcome(path=f"old/o{i}.md") for i in range(7)],
        failed=[FileOutcome(path='bad "quoted".pdf', reason="not a PDF: no header")],
        left_out=[LeftOut(reason="hidden", count=3, paths=[".git/", ".obsidian/"])],
        passed_over={".png": 4},
        themes=ThemesReport(communities=9, levels=2, rebuilt=True),
        totals={"documents": 157, "chunks": 320, "link_edges": 0},
    )
    count_files(report)
    report = cut_lists(report)
    text = render_text(report)
    lines = text.splitlines()
    assert lines[0] == (
        "indexed corpus notes in 42.0 s: 150 documents added, 0 replaced, 0 removed, 0 unchanged; "
        "300 chunks, 1200 units, 1 entity added"
    )
    assert "files: 150 added, 0 changed, 0 removed, 7 unchanged, 1 failed" in lines
    named = next(line for line in lines if line.startswith("added: "))
    assert named.count(".md") == 10 and named.endswith("and 140 more")
    assert '- "bad \\"quoted\\".pdf": not a PDF: no header' in lines  # the path JSON-quoted, the reason whole
    assert 'left out, hidden: ".git/", ".obsidian/" and 1 more' in lines
    assert "passed over, in formats not read: 4 .png" in lines
    assert "themes: 9 communities in 2 levels, rebuilt" in lines
    assert lines[-1] == "the corpus now holds: 157 documents, 320 chunks"  # no zero counters
    assert "old/o" not in text  # unchanged files are counted, not named
    assert len(text) < len(report.model_dump_json()) / 4
