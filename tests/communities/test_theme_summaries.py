"""LLM theme titles and summaries (issue 32, item 6) without a server: how answers are read, what
the prompt holds, how the writer treats a refused request, a failing LLM and an answer cut off,
that reports without them are stored exactly as before, and that an engine with theme summaries off
or no LLM asks nothing. The path through a real LLM server: tests/llm/test_llm_theme_summaries.py."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import httpx2
import numpy as np
import openai
import pytest

from cuerag import CueRag, Settings, make_document
from cuerag.communities.reports import Evidence, Report
from cuerag.communities.stored import ThemeSet, load_themes, point_id, report_payload, write_themes
from cuerag.communities.summaries import (
    MAX_TOKENS,
    STATEMENT_CHARS,
    SYSTEM_PROMPT,
    Summary,
    SummaryWriter,
    copies_example,
    parse_summary,
    summary_prompt,
)
from cuerag.errors import LLMError
from cuerag.llm.client import LLM, Completion
from cuerag.models.loading import Models
from cuerag.store.edge_store import EdgeStore

TITLE, SUMMARY = "Crash safety of commits", "These documents explain how a commit survives a power failure."


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (f"Title: {TITLE}\nSummary: {SUMMARY}", Summary(TITLE, SUMMARY)),
        (f"**Title:** {TITLE}\n\n**Summary:** {SUMMARY}", Summary(TITLE, SUMMARY)),
        # "The title", a full stop after it, a summary over two lines
        (
            f"The title: {TITLE}.\nSummary: These documents explain\nhow a commit survives a power failure.",
            Summary(TITLE, SUMMARY),
        ),
        (f"<think>a title first</think>Title: {TITLE}\nSummary: {SUMMARY}", Summary(TITLE, SUMMARY)),
        (f'```json\n{{"title": "{TITLE}", "summary": "{SUMMARY}"}}\n```', Summary(TITLE, SUMMARY)),
        # the prompt's own labels echoed after the answer end the summary; a second answer is ignored
        (f"Title: {TITLE}\nSummary: {SUMMARY}\nStatements:\n- The journal is synced.", Summary(TITLE, SUMMARY)),
        (f"Title: {TITLE}\nSummary: {SUMMARY}\nTitle: Another\nSummary: Another one.", Summary(TITLE, SUMMARY)),
        (f"Summary: {SUMMARY}", None),  # no title
        (f"Title: {TITLE}", None),  # no summary
        ("Title: 1984\nSummary: " + SUMMARY, None),  # a title with no letters
        ("Title: " + "word " * 13 + "\nSummary: " + SUMMARY, None),  # a sentence, not a title
        (f"Title: {TITLE}\nSummary: Short.", None),
        ("The documents are about many things.", None),
        ("", None),
    ],
)
def test_parse_summary(answer: str, expected: Summary | None) -> None:
    assert parse_summary(answer) == expected


def _report(cid: str = "L0.0", *, texts: tuple[str, ...] = ("The journal is synced before commit.",)) -> Report:
    return Report(
        id=cid,
        level=0,
        title="journal · commit · fsync",
        terms=["journal", "commit", "fsync"],
        entities=["SQLite"],
        evidence=[Evidence(unit_id=f"u{i}", chunk_id="c", doc_id="d", text=t) for i, t in enumerate(texts)],
        documents=["d", "e"],
        parent=None,
        children=[],
        vector=np.asarray([1.0, 0.0, 0.0, 0.0], dtype=np.float32),
    )


def test_the_prompt_holds_the_extractive_report_bounded() -> None:
    prompt = summary_prompt(_report(texts=("x" * 5000, "The journal is synced.")))
    assert prompt.startswith("Terms: journal, commit, fsync\nNames: SQLite\nDocuments: 2\nStatements:\n")
    first = prompt.split("\n- ")[1]
    assert len(first) == STATEMENT_CHARS and first.endswith("…")
    assert "- The journal is synced." in prompt and prompt.endswith("Answer:")


def test_an_answer_that_copies_the_example_is_not_taken() -> None:
    copied = Summary("Lighthouses of Quenby Island", "These documents describe the island and its keepers.")
    assert copies_example(copied, summary_prompt(_report()))
    assert not copies_example(copied, summary_prompt(_report(texts=("Quenby Island has a lighthouse.",))))
    assert not copies_example(Summary(TITLE, SUMMARY), summary_prompt(_report()))


class _Provider:
    """A provider answering from a script: each user message → an answer or an exception."""

    def __init__(self, answer: object, model: str = "m") -> None:
        self.model = model
        self.endpoint = "http://127.0.0.1:9/v1"
        self.secrets: tuple[str, ...] = ()
        self.answer = answer
        self.asked: list[str] = []
        self._lock = threading.Lock()

    def complete(self, system: str, user: str, *, max_tokens: int) -> Completion:
        assert system == SYSTEM_PROMPT and max_tokens == MAX_TOKENS
        with self._lock:
            self.asked.append(user)
        answer = self.answer(user) if callable(self.answer) else self.answer
        if isinstance(answer, Exception):
            raise answer
        assert isinstance(answer, Completion)
        return answer


def _writer(provider: _Provider, concurrency: int = 1) -> SummaryWriter:
    return SummaryWriter(LLM(provider=provider, max_retries=0), concurrency=concurrency)


def _reports(n: int) -> dict[str, Report]:
    return {f"L0.{i}": _report(f"L0.{i}", texts=(f"Statement number {i} about journals.",)) for i in range(n)}


def test_the_writer_adds_titles_and_counts_tokens() -> None:
    done = Completion(text=f"Title: {TITLE}\nSummary: {SUMMARY}", prompt_tokens=100, completion_tokens=20)
    provider = _Provider(done)
    reports, report = _writer(provider).write(_reports(2))
    assert (report.requested, report.written, report.fallback, report.problem) == (2, 2, 0, "")
    assert (report.usage.calls, report.usage.prompt_tokens, report.usage.completion_tokens) == (2, 200, 40)
    assert {(r.llm_title, r.llm_summary, r.llm_model, r.title) for r in reports.values()} == {
        (TITLE, SUMMARY, "m", "journal · commit · fsync")
    }
    # Written by this model already: not asked again. Another model: asked again.
    _, again = _writer(provider).write(reports)
    assert again.requested == 0 and len(provider.asked) == 2
    _, other = _writer(_Provider(done, model="other")).write(reports)
    assert other.requested == 2


def test_a_refused_or_unusable_answer_falls_back_and_the_rest_go_on() -> None:
    def answer(user: str) -> object:
        if "number 0" in user:  # the endpoint refuses this one request
            request = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
            return openai.BadRequestError("too long", response=httpx2.Response(400, request=request), body=None)
        if "number 1" in user:
            return Completion(text="Title: " + TITLE + "\nSummary: " + SUMMARY, truncated=True, completion_tokens=256)
        if "number 2" in user:
            return Completion(text="I cannot help with that.")
        return Completion(text=f"Title: {TITLE}\nSummary: {SUMMARY}")

    reports, report = _writer(_Provider(answer), concurrency=2).write(_reports(4))
    assert (report.requested, report.written, report.fallback, report.problem) == (4, 1, 3, "")
    assert [r.llm_title for r in reports.values()] == [None, None, None, TITLE]


def test_a_failing_llm_is_asked_nothing_more_in_the_run() -> None:
    provider = _Provider(LLMError("m at http://127.0.0.1:9/v1 failed: APIConnectionError"))
    reports, report = _writer(provider).write(_reports(5))
    assert len(provider.asked) == 1  # one failure, then no more calls (each would cost its retries)
    assert (report.requested, report.written, report.fallback) == (5, 0, 5)
    assert "APIConnectionError" in report.problem
    assert all(r.llm_title is None for r in reports.values())


def test_progress_is_heard_and_a_cancel_stops_asking() -> None:
    done = Completion(text=f"Title: {TITLE}\nSummary: {SUMMARY}")
    provider = _Provider(done)
    heard: list[tuple[str, int, int]] = []
    # Cancelled after the second answer: the other themes are not asked and keep extractive titles.
    reports, report = _writer(provider).write(
        _reports(5), progress=lambda *step: heard.append(step), should_stop=lambda: len(heard) >= 2
    )
    assert heard == [("theme summaries", 1, 5), ("theme summaries", 2, 5)]
    assert len(provider.asked) == 2
    assert (report.requested, report.written, report.fallback) == (5, 2, 3)
    assert report.problem.startswith("cancelled")
    assert [r.llm_title for r in reports.values()] == [TITLE, TITLE, None, None, None]


def test_reports_without_llm_fields_are_stored_as_before_and_with_them_read_back(tmp_path: Path) -> None:
    plain = _report("L0.0")
    written = dataclasses.replace(_report("L0.1"), llm_title=TITLE, llm_summary=SUMMARY, llm_model="m")
    assert set(report_payload(plain)) == {
        "theme_id",
        "level",
        "title",
        "terms",
        "entities",
        "evidence",
        "documents",
        "parent",
        "children",
    }
    assert point_id(plain) != point_id(dataclasses.replace(plain, llm_title=TITLE, llm_summary=SUMMARY, llm_model="m"))
    store = EdgeStore(tmp_path / "store")
    try:
        themes = ThemeSet(reports={"L0.0": plain, "L0.1": written}, doc_versions={}, next_ids={0: 2})
        write_themes(store, "c", themes, dim=4, batch=8)
        loaded = load_themes(store, "c")
        assert loaded is not None
        assert loaded.reports["L0.0"].llm_title is None and loaded.reports["L0.0"].shown_title == plain.title
        got = loaded.reports["L0.1"]
        assert (got.llm_title, got.llm_summary, got.llm_model, got.shown_title) == (TITLE, SUMMARY, "m", TITLE)
        assert loaded.point_ids() == themes.point_ids()
    finally:
        store.close()


@pytest.mark.parametrize("settings", [{}, {"llm_provider": "openai", "llm_model": "m", "theme_summaries": False}])
def test_no_llm_or_summaries_off_asks_nothing(settings: dict[str, object], models: Models, tmp_path: Path) -> None:
    # The endpoint would refuse a connection: a request would show as a problem in the report.
    engine = CueRag(Settings(data_dir=tmp_path, llm_base_url="http://127.0.0.1:9/v1", **settings), models=models)  # type: ignore[arg-type]
    try:
        report = engine.index_documents("c", [make_document("Journal", "The journal is synced before commit.")])
        assert report.themes is not None and report.themes.summaries is None
    finally:
        engine.close()
