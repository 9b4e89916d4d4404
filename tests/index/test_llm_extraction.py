"""LLM use end to end, against the Anthropic stand-in (tests/standin_anthropic.py) served on
loopback: the lenient reading of answers, hybrid extraction at α=0, 0.5 and 1 (which chunks go to
the LLM, which units are stored), fallbacks, retries, the response cache and an interrupted run,
the query-time entity and answer prompts, and the MCP `answer` tool.

The stand-in answers the extraction prompt from STATEMENTS, hand-written per passage title, so
every unit an LLM chunk holds is known in advance and differs from the passage's own sentences."""

from __future__ import annotations

import functools
import itertools
import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_graphs_equal
from mcp import Client
from mcp.server.mcpserver import MCPServer
from standin_anthropic import Fail, StandIn, anthropic_standin
from typer.testing import CliRunner

import cuerag.cli.app
import cuerag.cli.context
from cuerag import CueRag, Document, LLMError, ParameterError, Settings, make_document
from cuerag.graph.ids import entity_point_id
from cuerag.graph.snapshot import Graph
from cuerag.index.extraction import SYSTEM_PROMPT, USER_TEMPLATE, parse_units
from cuerag.index.knapsack import bleu_values
from cuerag.index.report import IndexReport
from cuerag.llm.client import LLM, make_llm
from cuerag.llm.json_reading import string_list
from cuerag.models.loading import Models
from cuerag.retrieval.answering import ANSWER_SYSTEM_PROMPT, ENTITY_SYSTEM_PROMPT
from cuerag.text.entities import normalize_entity
from cuerag.text.tools import TextTools
from server.app import build_server
from server.config import ServerSettings

MODEL = "claude-standin"
CORPUS = "llm"

# ---- the corpora and what the scripted LLM says about each passage --------------------------------

# Four short passages, each with a pronoun the LLM resolves: no LLM unit equals a sentence.
PASSAGES: dict[str, str] = {
    "Nottingham Forest F.C.": "Nottingham Forest is a football club based in West Bridgford, England. "
    "It won the European Cup in 1979 and 1980.",
    "Brian Clough": "Brian Clough was an English football manager born in Middlesbrough in 1935. "
    "He managed Nottingham Forest from 1975 to 1993.",
    "Marie Curie": "Marie Curie was a physicist born in Warsaw in 1867. "
    "She shared the 1903 Nobel Prize in Physics with Pierre Curie.",
    "Salzburg": "Salzburg is a city on the Salzach river in Austria. It is the birthplace of Wolfgang Amadeus Mozart.",
}

# The α=0.5 corpus: three near-duplicate ferry notices and one long passage unlike them.
FERRY_MAIL = "The Quenby ferry leaves the harbour at seven every morning and returns at noon with the mail."
FERRY_POST = "The Quenby ferry leaves the harbour at seven every morning and returns at noon with the post."
FERRY_LUNCH = "The Quenby ferry leaves the old harbour at eight on most mornings and comes back after lunch."
KEEPER = (
    "Agnes Dorr kept Marl Point Lighthouse for forty years. She wrote a memoir about the wreck of a schooner "
    "called Selkie, planted lavender beside her cottage, and painted gulls in watercolour."
)
# Corpus order puts the two chunks the knapsack must choose second and fourth, not first.
FERRIES: dict[str, str] = {
    "Ferry after lunch": FERRY_LUNCH,
    "Ferry with mail": FERRY_MAIL,
    "Agnes Dorr": KEEPER,
    "Ferry with post": FERRY_POST,
}

STATEMENTS: dict[str, list[str]] = {
    "Nottingham Forest F.C.": [
        "Nottingham Forest is a football club based in West Bridgford, England.",
        "Nottingham Forest won the European Cup in 1979 and 1980.",
    ],
    "Brian Clough": [
        "Brian Clough was an English football manager.",
        "Brian Clough was born in Middlesbrough in 1935.",
        "Brian Clough managed Nottingham Forest from 1975 to 1993.",
    ],
    "Marie Curie": [
        "Marie Curie was a physicist.",
        "Marie Curie was born in Warsaw in 1867.",
        "Marie Curie shared the 1903 Nobel Prize in Physics with Pierre Curie.",
    ],
    "Salzburg": [
        "Salzburg is a city on the Salzach river in Austria.",
        "Wolfgang Amadeus Mozart was born in Salzburg.",
    ],
    "Ferry after lunch": [
        "The Quenby ferry leaves the old harbour at eight on most mornings.",
        "The Quenby ferry comes back after lunch.",
    ],
    "Ferry with mail": [
        "The Quenby ferry leaves the harbour at seven every morning.",
        "The Quenby ferry returns at noon with the mail.",
    ],
    "Agnes Dorr": [
        "Agnes Dorr kept Marl Point Lighthouse for forty years.",
        "Agnes Dorr wrote a memoir about the wreck of the schooner Selkie.",
    ],
    "Ferry with post": [
        "The Quenby ferry leaves the harbour at seven every morning.",
        "The Quenby ferry returns at noon with the post.",
    ],
}

_PROMPT = re.compile(r"\ATitle: (?P<title>.*)\nPassage: (?P<passage>.*)\nAnswer:\Z", re.DOTALL)


def documents(passages: dict[str, str]) -> list[Document]:
    return [make_document(title, text) for title, text in passages.items()]


def parse_prompt(user: str) -> tuple[str, str]:
    """The title and passage of an extraction prompt (USER_TEMPLATE)."""
    match = _PROMPT.match(user)
    assert match is not None, user
    return match["title"], match["passage"]


Outcome = str | Fail


@dataclass
class Script:
    """What the stand-in answers: the extraction prompt from STATEMENTS (or a per-title queue or
    override), the entity and answer prompts from two settable strings. Anything else is a 400."""

    entity_answer: str = '["Nottingham Forest"]'
    answer: str = "West Bridgford"
    override: dict[str, Outcome] = field(default_factory=dict)  # every answer for a title
    queued: dict[str, list[Outcome]] = field(default_factory=dict)  # first answers for a title, in turn
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, body: dict[str, Any]) -> Outcome:
        system = body.get("system")
        user = body["messages"][-1]["content"]
        if system == SYSTEM_PROMPT:
            title, _ = parse_prompt(user)
            with self.lock:
                if self.queued.get(title):
                    return self.queued[title].pop(0)
            if title in self.override:
                return self.override[title]
            return json.dumps(STATEMENTS[title])
        if system == ENTITY_SYSTEM_PROMPT:
            return self.entity_answer
        if system == ANSWER_SYSTEM_PROMPT:
            return self.answer
        return Fail(400, "invalid_request_error", f"unexpected system prompt {system!r}")


def extraction_prompts(standin: StandIn, start: int = 0) -> list[tuple[str, str]]:
    """(title, passage) of every extraction request the stand-in received, from `start` on."""
    with standin.lock:
        bodies = standin.requests[start:]
    return [parse_prompt(b["messages"][-1]["content"]) for b in bodies if b.get("system") == SYSTEM_PROMPT]


def requests_with(standin: StandIn, system: str, start: int = 0) -> list[str]:
    """The user texts of the requests that used one system prompt, from `start` on."""
    with standin.lock:
        bodies = standin.requests[start:]
    return [b["messages"][-1]["content"] for b in bodies if b.get("system") == system]


def llm_settings(data_dir: Path, url: str, **overrides: Any) -> Settings:
    # These tests count the extraction's and the queries' requests: theme summaries, which an index
    # run also asks an LLM for, are off here and tested in tests/communities/test_theme_summaries.py.
    return Settings(
        data_dir=data_dir,
        llm_provider="anthropic",
        llm_model=MODEL,
        llm_base_url=url,
        llm_api_key="test-key",
        **{"theme_summaries": False, **overrides},
    )


def chunk_of(graph: Graph, title: str) -> int:
    return graph.chunk_titles.index(title)


def units_of(graph: Graph, title: str) -> list[str]:
    return [graph.unit_texts[u] for u in graph.chunk_units[chunk_of(graph, title)]]


def extraction_of(graph: Graph) -> dict[str, str]:
    """title -> the chunk payload's "extraction" field."""
    assert graph.points is not None
    return {
        graph.chunk_titles[c]: graph.points.chunks[cid].payload["extraction"] for c, cid in enumerate(graph.chunk_ids)
    }


@pytest.fixture
def engines() -> Iterator[list[CueRag]]:
    """Engines a test builds and leaves open, closed at its end."""
    made: list[CueRag] = []
    yield made
    for engine in made:
        engine.close()


# ---- 1. reading the LLM's answer ----------------------------------------------------------------

TWO = ["Alpha beta gamma.", "Delta epsilon zeta."]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('```json\n["Alpha beta gamma.", "Delta epsilon zeta."]\n```', TWO),
        ('```\n["Alpha beta gamma."]\n``` and then ["Not this one."]', TWO[:1]),
        ('Here are the units:\n["Alpha beta gamma.", "Delta epsilon zeta."]\nHope this helps! [1]', TWO),
        ('["Alpha beta gamma.", "Delta epsilon zeta.",]', TWO),
        ("['Alpha beta gamma.', 'Delta epsilon zeta.']", TWO),  # single quotes, repaired
        ('["Alpha beta gamma.", "Delta epsilon zeta."', TWO),  # unclosed list, repaired
        ('{"units": ["Alpha beta gamma.", "Delta epsilon zeta."]}', TWO),
        ('{"statements": ["Alpha beta gamma."], "units": 3}', TWO[:1]),  # the first key holding a list
        ('{"knowledge_units": [{"unit": "Alpha beta gamma."}]}', TWO[:1]),
        (
            '[{"text": "Alpha beta gamma."}, {"statement": "Delta epsilon zeta."}, {"x": "No text key."}, 5, null]',
            TWO,
        ),
        ('["Alpha beta gamma.", "Alpha   beta\\ngamma.", "Delta epsilon zeta.", "Alpha beta gamma."]', TWO),
        ('["short", "1234567890", "!!!!!!!!!!", "   ", "Alpha beta gamma.", "x"]', TWO[:1]),
        ('["' + "a" * 1001 + '", "Alpha beta gamma."]', TWO[:1]),  # over MAX_UNIT_CHARS
        ('"Alpha beta gamma."', []),  # a string, not a list
        ('{"answer": "Alpha beta gamma."}', []),  # an object without a list under a known key
        ('{"units": "Alpha beta gamma."}', []),
        ("42", []),
        ("null", []),
        ("[]", []),
        ("", []),
        ("I'm sorry, but I cannot help with that request.", []),
        ("<html><body>502 Bad Gateway</body></html>", []),
        ("[1, 2, 3", []),
        ('{"units": [', []),
        ("[[[", []),
        ("]]]][[[", []),
    ],
)
def test_parse_units(answer: str, expected: list[str]) -> None:
    assert parse_units(answer) == expected


def test_parse_units_keeps_at_most_200() -> None:
    answer = json.dumps([f"Statement number {i} here." for i in range(300)])
    units = parse_units(answer)
    assert len(units) == 200
    assert units[0] == "Statement number 0 here." and units[-1] == "Statement number 199 here."


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('```json\n["Nottingham Forest", "FA Cup"]\n```', ["Nottingham Forest", "FA Cup"]),
        ('The entities are: ["Nottingham Forest", "FA Cup",] as asked.', ["Nottingham Forest", "FA Cup"]),
        # string_list keeps duplicates, short names and digits (names may be short); empties go
        (
            '["Nottingham   Forest", "Nottingham Forest", "", " ", "EU", "1959"]',
            ["Nottingham Forest"] * 2 + ["EU", "1959"],
        ),
        ('["Brian Clough", 7, null, {"text": "Derby County"}]', ["Brian Clough"]),
        ('{"entities": ["Nottingham Forest"]}', []),  # only a list is read
        ('"Nottingham Forest"', []),
        ("[]", []),
        ("No entities here.", []),
        ("", []),
        ("[[[", []),
    ],
)
def test_string_list(answer: str, expected: list[str]) -> None:
    assert string_list(answer) == expected


# ---- 2. α=1 over the whole corpus (one engine for the module; tests only read it) -----------------


@dataclass
class Indexed:
    engine: CueRag
    standin: StandIn
    script: Script
    report: IndexReport


@pytest.fixture(scope="module")
def indexed(models: Models, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Indexed]:
    script = Script()
    with anthropic_standin(script) as standin:
        engine = CueRag(llm_settings(tmp_path_factory.mktemp("alpha1"), standin.url, alpha=1.0), models=models)
        report = engine.index_documents(CORPUS, documents(PASSAGES))
        yield Indexed(engine=engine, standin=standin, script=script, report=report)
        engine.close()


def test_alpha_1_sends_every_chunk_with_the_extraction_prompt(indexed: Indexed) -> None:
    prompts = extraction_prompts(indexed.standin)
    # One request per chunk, each carrying the passage exactly as written; requests run
    # concurrently, so their order is not fixed.
    assert sorted(prompts) == sorted(PASSAGES.items())
    for body in indexed.standin.requests[: len(PASSAGES)]:
        user = body["messages"][-1]["content"]
        title, _ = parse_prompt(user)
        assert user == USER_TEMPLATE.format(title=title, text=PASSAGES[title])
        assert body["model"] == MODEL
        assert body["max_tokens"] == indexed.engine.settings.llm_max_tokens


def test_alpha_1_report(indexed: Indexed) -> None:
    report = indexed.report
    assert report.documents_added == report.chunks_added == 4
    assert report.chunks_llm == 4
    assert report.chunks_fallback == 0
    assert set(report.llm_usage) == {"extract"}
    usage = report.llm_usage["extract"]
    assert usage.calls == 4 and usage.cached_calls == 0
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert report.units_added == sum(len(s) for t, s in STATEMENTS.items() if t in PASSAGES) == 10
    assert "extract" in report.stage_seconds and "select" in report.stage_seconds


def test_alpha_1_stores_exactly_the_llm_units(indexed: Indexed) -> None:
    graph = indexed.engine.graph(CORPUS)
    assert extraction_of(graph) == dict.fromkeys(PASSAGES, "llm")
    sentences = TextTools().sentences
    for title, text in PASSAGES.items():
        assert units_of(graph, title) == STATEMENTS[title]  # in the LLM's order
        assert STATEMENTS[title] != sentences(text)
    # No unit is one of the passages' pronoun sentences ("It won the European Cup ...").
    assert not [u for u in graph.unit_texts if u.split()[0] in ("It", "He", "She")]
    assert sorted(graph.unit_texts) == sorted(u for t in PASSAGES for u in STATEMENTS[t])
    assert graph.sizes["chunks"] == 4 and graph.sizes["units"] == 10


def test_alpha_1_links_the_entities_ner_finds_in_the_llm_units(indexed: Indexed) -> None:
    engine = indexed.engine
    graph = engine.graph(CORPUS)
    found = engine.models.ner.extract(graph.unit_texts)
    for u, (text, mentions) in enumerate(zip(graph.unit_texts, found, strict=True)):
        title = graph.chunk_titles[graph.unit_chunks[u][0]]
        expected = {entity_point_id(s) for s, _ in mentions if normalize_entity(s)} | {entity_point_id(title)}
        linked = {graph.entity_ids[e] for e in graph.unit_entities[u]}
        assert linked == expected, text
    # Spelled out for one unit: the resolved pronoun leaves a statement NER reads whole.
    curie = graph.unit_texts.index("Marie Curie shared the 1903 Nobel Prize in Physics with Pierre Curie.")
    names = {graph.entity_names[e] for e in graph.unit_entities[curie]}
    assert {"Marie Curie", "Pierre Curie"} <= names
    # Every entity reaches back to the units that mention it.
    for e, units in enumerate(graph.entity_units):
        for u in units:
            assert e in graph.unit_entities[u]


@pytest.mark.parametrize(
    ("question", "title"),
    [
        ("Who shared the 1903 Nobel Prize in Physics with Pierre Curie?", "Marie Curie"),
        ("Which football manager was born in Middlesbrough in 1935?", "Brian Clough"),
    ],
)
def test_alpha_1_corpus_answers_queries(indexed: Indexed, question: str, title: str) -> None:
    before = len(indexed.standin.requests)
    result = indexed.engine.query(CORPUS, question)
    assert result.chunks[0].title == title
    assert result.trace is not None and result.trace.entity_source == "ner"
    assert len(indexed.standin.requests) == before  # a plain query asks the LLM nothing


# ---- 9. the query-time prompts (same engine) ------------------------------------------------------


def test_llm_entities_replace_ner(indexed: Indexed) -> None:
    standin, script = indexed.standin, indexed.script
    question = "Where is the club that won the European Cup in 1979 based?"
    script.entity_answer = '```json\n["Nottingham Forest"]\n```'
    start = len(standin.requests)
    result = indexed.engine.query(CORPUS, question, llm_entities=True)
    assert requests_with(standin, ENTITY_SYSTEM_PROMPT, start) == [f"Question: {question}\nAnswer:"]
    assert len(standin.requests) == start + 1
    trace = result.trace
    assert trace is not None
    assert trace.entity_source == "llm"
    assert trace.query_entities == ["Nottingham Forest"]
    linked = [a for a in trace.anchors if a.source == "query_entity"]
    assert linked and linked[0].mention == "Nottingham Forest"
    assert normalize_entity(linked[0].name) == "nottingham forest"
    assert result.chunks[0].title == "Nottingham Forest F.C."


def test_unusable_llm_entities_fall_back_to_ner(indexed: Indexed) -> None:
    standin, script = indexed.standin, indexed.script
    question = "Which physicist was born in Warsaw in 1867?"
    script.entity_answer = "I could not find any entities."
    start = len(standin.requests)
    result = indexed.engine.query(CORPUS, question, llm_entities=True)
    assert len(requests_with(standin, ENTITY_SYSTEM_PROMPT, start)) == 1
    plain = indexed.engine.query(CORPUS, question)
    assert result.trace is not None and plain.trace is not None
    assert result.trace.entity_source == "ner"
    assert result.trace.query_entities == plain.trace.query_entities
    assert [c.chunk_id for c in result.chunks] == [c.chunk_id for c in plain.chunks]


def test_answer_prompt_and_result(indexed: Indexed) -> None:
    standin, script, engine = indexed.standin, indexed.script, indexed.engine
    question = "Where is Nottingham Forest based?"
    script.answer = "West Bridgford"
    start = len(standin.requests)
    result = engine.answer(CORPUS, question)
    assert result.answer == "West Bridgford"
    assert result.corpus == CORPUS and result.question == question and result.method == "qiter"
    assert set(result.llm_usage) == {"answer"}
    usage = result.llm_usage["answer"]
    assert usage.calls == 1 and usage.cached_calls == 0 and usage.prompt_tokens > 0
    assert result.chunks[0].title == "Nottingham Forest F.C."
    assert [c.chunk_id for c in result.chunks] == [c.chunk_id for c in engine.query(CORPUS, question).chunks]

    (user,) = requests_with(standin, ANSWER_SYSTEM_PROMPT, start)
    assert len(standin.requests) == start + 1
    # The question, the passages best first, the question again.
    assert user.count(question) == 2
    head, tail = f"Question: {question}\n\nPassages:\n", f"\n\nQuestion: {question}\nAnswer:"
    assert user.startswith(head) and user.endswith(tail)
    body = user[len(head) : -len(tail)]
    expected = "\n\n".join(f"[{n}] {c.title}\n{c.text}" for n, c in enumerate(result.chunks, start=1))
    assert body == expected
    assert len(result.chunks) == 4  # the whole corpus fits the default top N and context budget

    # The same question again comes from the cache: no request, a cached call.
    again = engine.answer(CORPUS, question)
    assert again.answer == "West Bridgford"
    assert again.llm_usage["answer"].calls == 0 and again.llm_usage["answer"].cached_calls == 1
    assert len(standin.requests) == start + 1


def test_answer_keeps_the_first_line_and_reports_both_stages(indexed: Indexed) -> None:
    standin, script = indexed.standin, indexed.script
    question = "Who managed Nottingham Forest from 1975?"
    script.entity_answer = '["Nottingham Forest"]'
    script.answer = "  Brian Clough  \nHe managed the club for eighteen years."
    start = len(standin.requests)
    result = indexed.engine.answer(CORPUS, question, llm_entities=True)
    assert result.answer == "Brian Clough"
    assert list(result.llm_usage) == ["query_entities", "answer"]
    assert result.llm_usage["query_entities"].calls == 1 and result.llm_usage["answer"].calls == 1
    assert result.trace is not None and result.trace.entity_source == "llm"
    assert [b.get("system") for b in standin.requests[start:]] == [ENTITY_SYSTEM_PROMPT, ANSWER_SYSTEM_PROMPT]


def test_answer_and_llm_entities_need_an_llm(make_engine: Callable[..., CueRag]) -> None:
    engine = make_engine()
    engine.index_documents(CORPUS, documents({"Salzburg": PASSAGES["Salzburg"]}))
    with pytest.raises(ParameterError, match="CUERAG_LLM_PROVIDER"):
        engine.answer(CORPUS, "Where was Mozart born?")
    with pytest.raises(ParameterError, match="CUERAG_LLM_PROVIDER"):
        engine.query(CORPUS, "Where was Mozart born?", llm_entities=True)


# ---- 3. α=0 asks nothing --------------------------------------------------------------------------


def test_alpha_0_makes_no_request(models: Models, tmp_path: Path, engines: list[CueRag]) -> None:
    with anthropic_standin(Script()) as standin:
        engine = CueRag(llm_settings(tmp_path, standin.url, alpha=0.0), models=models)
        engines.append(engine)
        assert engine.llm is not None
        report = engine.index_documents(CORPUS, documents(PASSAGES))
        assert standin.requests == []
    assert report.chunks_added == 4
    assert report.chunks_llm == report.chunks_fallback == 0
    assert report.llm_usage == {}
    graph = engine.graph(CORPUS)
    assert extraction_of(graph) == dict.fromkeys(PASSAGES, "sentences")
    sentences = TextTools().sentences
    for title, text in PASSAGES.items():
        assert units_of(graph, title) == sentences(text)


# ---- 4. α=0.5: the knapsack picks the chunks -----------------------------------------------------


def test_alpha_half_sends_the_knapsack_choice(models: Models, tmp_path: Path, engines: list[CueRag]) -> None:
    # Weights are the passages' cl100k token counts: 20 for each ferry notice, 42 for the keeper's
    # passage; 102 in all, so the budget is ceil(0.5 * 102) = 51.
    # Values are each passage's sentence BLEU against the other three (13a tokens, exp smoothing):
    # - mail (18 tokens) against post, identical but for its last word: n-gram precisions 17/18,
    #   15/17, 14/16, 13/15 (the n-grams holding "mail" miss), brevity penalty 1 (a reference of
    #   18 tokens), BLEU = (17/18 · 15/17 · 14/16 · 13/15)^(1/4) = 0.8916; post likewise 0.8916;
    # - lunch (18 tokens) shares "The Quenby ferry leaves the ... harbour at ... and ... ." with
    #   them: 9/18, 5/17, 3/16, 2/15, BLEU = 0.2462;
    # - the keeper's passage shares a few unigrams only: BLEU ≈ 0.014.
    # Within 51 tokens: two ferry notices (40) but never three (60), and the keeper's 42 with
    # nothing else. The best pair is mail + post (1.783, against 1.138 for either with lunch).
    text = TextTools()
    assert [text.count_tokens(t) for t in FERRIES.values()] == [20, 20, 42, 20]
    values = bleu_values(list(FERRIES.values()))
    assert values.round(4).tolist() == [0.2462, 0.8916, 0.0139, 0.8916]

    with anthropic_standin(Script()) as standin:
        engine = CueRag(llm_settings(tmp_path, standin.url, alpha=0.5), models=models)
        engines.append(engine)
        report = engine.index_documents(CORPUS, documents(FERRIES))
        assert sorted(title for title, _ in extraction_prompts(standin)) == ["Ferry with mail", "Ferry with post"]
        assert len(standin.requests) == 2
    assert report.chunks_added == 4
    assert report.chunks_llm == 2 and report.chunks_fallback == 0
    assert report.llm_usage["extract"].calls == 2
    graph = engine.graph(CORPUS)
    assert extraction_of(graph) == {
        "Ferry after lunch": "sentences",
        "Ferry with mail": "llm",
        "Agnes Dorr": "sentences",
        "Ferry with post": "llm",
    }
    for title in ("Ferry with mail", "Ferry with post"):
        assert units_of(graph, title) == STATEMENTS[title]
    for title in ("Ferry after lunch", "Agnes Dorr"):
        assert units_of(graph, title) == text.sentences(FERRIES[title])
    # The statement mail and post share is one unit node in both chunks.
    shared = graph.unit_texts.index("The Quenby ferry leaves the harbour at seven every morning.")
    assert sorted(graph.chunk_titles[c] for c in graph.unit_chunks[shared]) == ["Ferry with mail", "Ferry with post"]


# ---- 5. an unreadable answer falls back to sentences ---------------------------------------------


def test_broken_json_falls_back_to_sentences(models: Models, tmp_path: Path, engines: list[CueRag]) -> None:
    broken = 'Here you go: {"units": ['  # cut off mid-answer
    assert parse_units(broken) == []
    script = Script(override={"Salzburg": broken})
    with anthropic_standin(script) as standin:
        engine = CueRag(llm_settings(tmp_path, standin.url, alpha=1.0), models=models)
        engines.append(engine)
        report = engine.index_documents(CORPUS, documents(PASSAGES))
        assert sorted(t for t, _ in extraction_prompts(standin)) == sorted(PASSAGES)
    assert report.chunks_llm == 3
    assert report.chunks_fallback == 1
    assert report.llm_usage["extract"].calls == 4  # the unusable answer was still paid for
    graph = engine.graph(CORPUS)
    assert extraction_of(graph) == {**dict.fromkeys(PASSAGES, "llm"), "Salzburg": "sentences"}
    assert units_of(graph, "Salzburg") == TextTools().sentences(PASSAGES["Salzburg"])
    for title in ("Nottingham Forest F.C.", "Brian Clough", "Marie Curie"):
        assert units_of(graph, title) == STATEMENTS[title]


# ---- 6. retries -----------------------------------------------------------------------------------


def quick(llm: LLM | None) -> LLM:
    """The settings' LLM with backoff waits capped at 10 ms."""
    assert llm is not None
    return replace(llm, max_wait_seconds=0.01)


def test_transient_errors_are_retried_bad_requests_are_not(
    models: Models, tmp_path: Path, engines: list[CueRag]
) -> None:
    overloaded = Fail(529, "overloaded_error", "Overloaded")
    script = Script(
        queued={"Brian Clough": [overloaded, overloaded]},
        override={"Marie Curie": Fail(400, "invalid_request_error", "prompt is too long")},
    )
    with anthropic_standin(script) as standin:
        settings = llm_settings(tmp_path, standin.url, alpha=1.0)
        assert settings.llm_max_retries == 4
        engine = CueRag(settings, models=models, llm=quick(make_llm(settings)))
        engines.append(engine)
        report = engine.index_documents(CORPUS, documents(PASSAGES))
        titles = [t for t, _ in extraction_prompts(standin)]
    assert {t: titles.count(t) for t in PASSAGES} == {
        "Nottingham Forest F.C.": 1,
        "Brian Clough": 3,  # 529, 529, then the answer
        "Marie Curie": 1,  # a 400 is final
        "Salzburg": 1,
    }
    assert report.chunks_llm == 3 and report.chunks_fallback == 1
    assert report.llm_usage["extract"].calls == 3  # failed calls cost nothing
    graph = engine.graph(CORPUS)
    assert extraction_of(graph)["Brian Clough"] == "llm"
    assert units_of(graph, "Brian Clough") == STATEMENTS["Brian Clough"]
    assert extraction_of(graph)["Marie Curie"] == "sentences"
    assert units_of(graph, "Marie Curie") == TextTools().sentences(PASSAGES["Marie Curie"])


def test_retries_stop_after_max_retries(tmp_path: Path) -> None:
    overloaded = Fail(529, "overloaded_error", "Overloaded")
    with anthropic_standin(lambda body: overloaded) as standin:
        settings = llm_settings(tmp_path, standin.url, llm_max_retries=1, llm_cache=False)
        llm = quick(make_llm(settings, cache_dir=tmp_path))
        assert llm.cache is None and llm.max_retries == 1
        with pytest.raises(LLMError, match="Overloaded"):
            llm.complete("system", "user", max_tokens=16)
        assert len(standin.requests) == 2  # the call and one retry


def test_no_llm_when_none_is_configured_and_a_model_is_required(tmp_path: Path) -> None:
    assert make_llm(Settings(data_dir=tmp_path)) is None
    with pytest.raises(ParameterError, match="CUERAG_LLM_MODEL"):
        make_llm(Settings(data_dir=tmp_path, llm_provider="anthropic"))


# ---- 7. the response cache and an interrupted run ------------------------------------------------


def test_cached_answers_are_not_requested_again(models: Models, tmp_path: Path, engines: list[CueRag]) -> None:
    data = tmp_path / "data"
    with anthropic_standin(Script()) as standin:
        first = CueRag(llm_settings(data, standin.url, alpha=1.0), models=models)
        report = first.index_documents("first", documents(PASSAGES))
        n = len(standin.requests)
        assert n == report.llm_usage["extract"].calls == 4
        first.close()

        second = CueRag(llm_settings(data, standin.url, alpha=1.0), models=models)
        engines.append(second)
        again = second.index_documents("second", documents(PASSAGES))
        assert len(standin.requests) == n  # not one more request
    usage = again.llm_usage["extract"]
    assert usage.cached_calls == n
    assert usage.calls == usage.prompt_tokens == usage.completion_tokens == 0
    assert again.chunks_llm == 4 and again.chunks_fallback == 0
    a, b = second.graph("first"), second.graph("second")
    assert a.unit_texts == b.unit_texts
    assert a.chunk_units == b.chunk_units and a.chunk_ids == b.chunk_ids
    assert extraction_of(b) == dict.fromkeys(PASSAGES, "llm")


class Interrupted(Exception):
    pass


def test_interrupted_run_resumes_from_the_cache(models: Models, tmp_path: Path, engines: list[CueRag]) -> None:
    """The first run dies after the first chunk's units arrive. With one request in flight at a
    time and every later request held until the abort, at most two prompts are answered (the
    first, and the one in flight when the run died); the rest are never sent. The rerun sends
    only those that went unanswered, and ends with the graph an uninterrupted run builds."""
    base = Script()
    aborted = threading.Event()
    counter = itertools.count()

    def script(body: dict[str, Any]) -> Outcome:
        if next(counter) >= 1:
            aborted.wait(10)
        return base(body)

    def die_after_one(stage: str, done: int, total: int) -> None:
        if stage == "extract" and done == 1:
            aborted.set()
            raise Interrupted("killed")

    data = tmp_path / "data"
    docs = documents(PASSAGES)
    with anthropic_standin(script) as standin:
        settings = llm_settings(data, standin.url, alpha=1.0, llm_concurrency=1)
        engine = CueRag(settings, models=models)
        with pytest.raises(Interrupted):
            engine.index_documents(CORPUS, docs, progress=die_after_one)
        answered = [t for t, _ in extraction_prompts(standin)]
        assert 1 <= len(answered) <= 2, answered
        # Extraction precedes every write, and a new corpus whose first run failed is removed:
        # nothing is left behind, not even an empty corpus.
        assert engine.corpora() == []
        engine.close()

        resumed = CueRag(llm_settings(data, standin.url, alpha=1.0), models=models)
        engines.append(resumed)
        start = len(standin.requests)
        report = resumed.index_documents(CORPUS, docs)
        rerun = [t for t, _ in extraction_prompts(standin, start)]
        assert sorted(rerun) == sorted(set(PASSAGES) - set(answered))
        assert report.llm_usage["extract"].calls == 4 - len(answered)
        assert report.llm_usage["extract"].cached_calls == len(answered)
        assert report.chunks_llm == 4 and report.documents_added == 4

        fresh = CueRag(llm_settings(tmp_path / "fresh", standin.url, alpha=1.0), models=models)
        engines.append(fresh)
        fresh.index_documents(CORPUS, docs)
    assert_graphs_equal(resumed.graph(CORPUS), fresh.graph(CORPUS))
    assert extraction_of(resumed.graph(CORPUS)) == dict.fromkeys(PASSAGES, "llm")


# ---- 8. α > 0 without an LLM ---------------------------------------------------------------------


def test_alpha_without_llm_is_refused_before_any_write(models: Models, tmp_path: Path, engines: list[CueRag]) -> None:
    engine = CueRag(Settings(data_dir=tmp_path, alpha=0.5), models=models)
    engines.append(engine)
    assert engine.llm is None
    with pytest.raises(ParameterError, match="CUERAG_LLM_PROVIDER") as caught:
        engine.index_documents(CORPUS, documents(PASSAGES))
    assert "alpha=0.5" in str(caught.value)
    assert engine.corpora() == []


# ---- 10. MCP ---------------------------------------------------------------------------------------


def make_server(models: Models, settings: Settings) -> MCPServer:
    return build_server(
        settings, ServerSettings(allowed_roots=[settings.data_dir]), engine_factory=lambda s: CueRag(s, models=models)
    )


@pytest.mark.anyio
async def test_mcp_answer_tool_with_an_llm(models: Models, tmp_path: Path) -> None:
    script = Script(answer="Middlesbrough")
    with anthropic_standin(script) as standin:
        server = make_server(models, llm_settings(tmp_path, standin.url, alpha=1.0))
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert "answer" in tools
            assert "llm_entities" in tools["q_iter"].input_schema["properties"]  # listed: the server has an LLM

            inline = [{"title": t, "text": x} for t, x in PASSAGES.items()]
            messages: list[str] = []

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                messages.append(message or "")

            indexed = await client.call_tool(
                "index_corpus", {"corpus": CORPUS, "documents": inline}, progress_callback=on_progress
            )
            assert not indexed.is_error, indexed.content
            report = indexed.structured_content
            assert report is not None
            assert report["chunks_llm"] == 4 and report["chunks_fallback"] == 0
            assert report["llm_usage"]["extract"]["calls"] == 4
            assert report["llm_usage"]["extract"]["prompt_tokens"] > 0
            assert sorted(t for t, _ in extraction_prompts(standin)) == sorted(PASSAGES)
            assert "extract 4/4" in messages  # the LLM stage has its own share of the progress

            question = "Where was the manager of Nottingham Forest born?"
            start = len(standin.requests)
            result = await client.call_tool(
                "answer", {"corpus": CORPUS, "question": question, "top_n": 2, "detail": "full"}
            )
            assert not result.is_error, result.content
            answer = result.structured_content
            assert answer is not None
            assert answer["answer"] == "Middlesbrough"
            assert answer["question"] == question
            assert len(answer["chunks"]) == 2
            assert answer["llm_usage"]["answer"]["calls"] == 1
            (user,) = requests_with(standin, ANSWER_SYSTEM_PROMPT, start)
            assert [f"[{n}] {c['title']}\n" in user for n, c in enumerate(answer["chunks"], start=1)] == [True, True]
            assert "[3] " not in user

            # The default, compact: the answer, its chunks with why each was retrieved, no trace.
            compact = await client.call_tool("answer", {"corpus": CORPUS, "question": question, "top_n": 2})
            brief = compact.structured_content
            assert brief is not None and brief["answer"] == "Middlesbrough" and "trace" not in brief
            assert [c["chunk_id"] for c in brief["chunks"]] == [c["chunk_id"] for c in answer["chunks"]]
            assert all(c["why"] for c in brief["chunks"]) and brief["llm_tokens"] >= 0  # 0 when cached
            assert compact.content[0].text.startswith("answer: Middlesbrough")  # type: ignore[union-attr]

            # Limited to one document, the answer is written from its chunks alone.
            one = answer["chunks"][0]["doc_id"]
            limited = await client.call_tool(
                "answer", {"corpus": CORPUS, "question": question, "top_n": 2, "filter": {"doc_ids": [one]}}
            )
            assert limited.structured_content is not None, limited.content
            assert {c["doc_id"] for c in limited.structured_content["chunks"]} == {one}


@pytest.mark.anyio
async def test_mcp_answer_tool_hidden_without_an_llm(models: Models, tmp_path: Path) -> None:
    server = make_server(models, Settings(data_dir=tmp_path))
    async with Client(server) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "answer" not in names
        assert {"q_iter", "index_corpus"} <= names
        result = await client.call_tool("answer", {"corpus": CORPUS, "question": "Anything?"})
        assert result.is_error
        assert result.content[0].text == (  # type: ignore[union-attr]
            "answer is not available here: no LLM is configured (set CUERAG_LLM_PROVIDER and its model)"
        )


# ---- 11. hostile and awkward answers ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        # A lone surrogate would break ids, NER and the embedder: that unit is dropped.
        ('["Alpha Corp \\ud800 is a company in Oslo.", "Beta Ltd is a firm in Bergen."]',
         ["Beta Ltd is a firm in Bergen."]),
        ("[" * 1000 + "]" * 1000, []),  # nested past the parser's recursion limit
        ("[" * 2000, []),
        # Brackets in the prose before the list: the list is still found.
        ('Here are [3] units:\n["Alpha Corp is a company in Oslo."]', ["Alpha Corp is a company in Oslo."]),
    ],
)  # fmt: skip
def test_hostile_answers_never_crash_the_parser(answer: str, expected: list[str]) -> None:
    assert parse_units(answer) == expected


def test_entity_lists_drop_non_unicode_names() -> None:
    assert string_list('["Oslo", "\\udc80", "Bergen"]') == ["Oslo", "Bergen"]


def test_an_answer_cut_off_at_max_tokens_falls_back(models: Models, tmp_path: Path, engines: list[CueRag]) -> None:
    long_answer = json.dumps([f"Salzburg fact number {n} is about the Salzach river." for n in range(40)])
    script = Script(override={"Salzburg": long_answer})
    with anthropic_standin(script) as standin:
        engine = CueRag(llm_settings(tmp_path, standin.url, alpha=1.0, llm_max_tokens=100), models=models)
        engines.append(engine)
        report = engine.index_documents(CORPUS, documents(PASSAGES))
    # json-repair would close the cut list, but its last unit is cut and the rest is missing.
    assert parse_units(" ".join(long_answer.split(" ")[:100]))
    assert (report.chunks_llm, report.chunks_fallback) == (3, 1)
    graph = engine.graph(CORPUS)
    assert extraction_of(graph)["Salzburg"] == "sentences"
    assert units_of(graph, "Salzburg") == TextTools().sentences(PASSAGES["Salzburg"])


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        (Fail(401, "authentication_error", "invalid x-api-key"), "invalid x-api-key"),
        (Fail(404, "not_found_error", "model: claude-standin"), "model: claude-standin"),
        (Fail(529, "overloaded_error", "Overloaded"), "Overloaded"),  # still failing after the retries
    ],
)
def test_an_llm_that_cannot_be_used_stops_the_run_before_any_write(
    models: Models, tmp_path: Path, engines: list[CueRag], failure: Fail, message: str
) -> None:
    """Falling back for every chunk would build an index nobody asked for: the run stops, names
    the problem, and leaves nothing behind; a rerun once the LLM works starts clean."""
    with anthropic_standin(lambda body: failure) as standin:
        settings = llm_settings(tmp_path, standin.url, alpha=1.0, llm_max_retries=1)
        engine = CueRag(settings, models=models, llm=quick(make_llm(settings, cache_dir=tmp_path)))
        engines.append(engine)
        with pytest.raises(LLMError, match=message) as caught:
            engine.index_documents(CORPUS, documents(PASSAGES))
    assert standin.url in str(caught.value)  # the message says which endpoint
    assert engine.corpora() == []


def test_a_missing_openai_key_is_a_clear_configuration_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ParameterError, match="cannot set up the openai LLM"):
        make_llm(Settings(data_dir=tmp_path, llm_provider="openai", llm_model="gpt-x"))


def test_a_base_url_takes_the_key_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    settings = Settings(data_dir=tmp_path, llm_provider="openai", llm_model="m", llm_base_url="http://127.0.0.1:9/v1")
    llm = make_llm(settings)
    assert llm is not None
    assert llm.provider.endpoint == "http://127.0.0.1:9/v1/"
    assert llm.provider._client.api_key == "sk-from-env"  # type: ignore[attr-defined]


def test_thinking_is_stripped_from_answers(models: Models, tmp_path: Path, engines: list[CueRag]) -> None:
    script = Script(answer="<think>The passages say West Bridgford.\nSo:</think>\nWest Bridgford")
    with anthropic_standin(script) as standin:
        engine = CueRag(llm_settings(tmp_path, standin.url), models=models)
        engines.append(engine)
        engine.index_documents(CORPUS, documents(PASSAGES))
        assert engine.answer(CORPUS, "Where is Nottingham Forest based?").answer == "West Bridgford"


# ---- 12. the CLI's LLM commands ----------------------------------------------------------------------


def test_cli_answer_and_llm_entities(models: Models, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuerag.cli.context, "make_own_engine", functools.partial(CueRag, models=models))
    corpus_file = tmp_path / "corpus.json"
    corpus_file.write_text(json.dumps([{"title": t, "text": x} for t, x in PASSAGES.items()]))
    runner = CliRunner()
    with anthropic_standin(Script(answer="West Bridgford")) as standin:
        llm = ["--llm-provider", "anthropic", "--llm-model", MODEL, "--llm-base-url", standin.url]
        env = {"CUERAG_DATA_DIR": str(tmp_path / "data"), "CUERAG_LLM_API_KEY": "test-key"}
        indexed = runner.invoke(cuerag.cli.app.app, [*llm, "index", str(corpus_file), "-c", CORPUS], env=env)
        assert indexed.exit_code == 0, indexed.output
        question = "Where is Nottingham Forest based?"
        done = runner.invoke(cuerag.cli.app.app, [*llm, "answer", question, "-c", CORPUS, "--json"], env=env)
        assert done.exit_code == 0, done.output
        result = json.loads(done.stdout)
        assert result["answer"] == "West Bridgford"
        assert result["llm_usage"]["answer"]["calls"] == 1
        entities = runner.invoke(
            cuerag.cli.app.app, [*llm, "query", question, "-c", CORPUS, "--llm-entities", "--json"], env=env
        )
        assert entities.exit_code == 0, entities.output
        trace = json.loads(entities.stdout)["trace"]
        assert (trace["entity_source"], trace["query_entities"]) == ("llm", ["Nottingham Forest"])
        # Without an LLM the same command is refused with what to set.
        plain = runner.invoke(cuerag.cli.app.app, ["answer", question, "-c", CORPUS], env=env)
    assert plain.exit_code == 1
    assert "CUERAG_LLM_PROVIDER" in plain.output
