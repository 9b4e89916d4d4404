"""Evaluation: question formats, gold passages, metrics, baselines and the `cuerag eval` command."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import SAMPLE, SAMPLE_CORPUS
from pydantic import SecretStr
from standin_anthropic import anthropic_standin
from typer.testing import CliRunner

from cuerag.cli.app import app
from cuerag.config import QIterParams, Settings
from cuerag.engine.facade import CueRag
from cuerag.errors import InputError, ParameterError
from cuerag.evaluation.answers import answer_accuracy, answer_f1, normalize_answer
from cuerag.evaluation.questions import Question, load_questions
from cuerag.evaluation.report import write_report
from cuerag.evaluation.runner import parse_method, run_eval, score_method
from cuerag.index.sync import load_paths
from cuerag.ingest.documents import content_id, make_document
from cuerag.models.loading import Models
from cuerag.retrieval.answering import ANSWER_SYSTEM_PROMPT
from cuerag.retrieval.baselines import RRF_K, rrf
from cuerag.retrieval.results import ChunkHit, RetrievalResult

DOCS = [
    make_document("Alpha", "Alpha is a town."),
    make_document("Beta", "Beta is a river."),
    make_document("Gamma", "Gamma is a mountain."),
    make_document("Gamma", "Gamma is also a film."),  # a second passage with the same title
]


def _write(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_hotpotqa_form_resolves_gold_titles(tmp_path: Path) -> None:
    rec = {"_id": "h1", "question": "Q?", "answer": "a town", "level": "easy", "type": "bridge",
           "supporting_facts": [["Alpha", 0], ["Beta", 0], ["Alpha", 1]]}  # fmt: skip
    [q] = load_questions(_write(tmp_path, "h.json", [rec]), DOCS)
    assert q.id == "h1"
    assert q.gold_doc_ids == [DOCS[0].id, DOCS[1].id]  # distinct titles, first-seen order
    assert q.answers == ["a town"]


def test_2wiki_form_is_detected_by_its_evidences(tmp_path: Path) -> None:
    rec = {"_id": "w1", "question": "Q?", "answer": "x", "type": "compositional", "evidences": [],
           "supporting_facts": [["Beta", 0]]}  # fmt: skip
    [q] = load_questions(_write(tmp_path, "w.json", [rec]), DOCS)
    assert q.gold_doc_ids == [DOCS[1].id]


def test_musique_form_matches_title_and_text(tmp_path: Path) -> None:
    paragraphs = [
        {"idx": 0, "title": "Gamma", "paragraph_text": "Gamma is also a film.", "is_supporting": True},
        {"idx": 1, "title": "Alpha", "paragraph_text": "Alpha is a town.", "is_supporting": False},
    ]
    rec = {"id": "m1", "question": "Q?", "answer": "film", "answer_aliases": ["movie"], "paragraphs": paragraphs}
    [q] = load_questions(_write(tmp_path, "m.json", [rec]), DOCS)
    # Two passages are titled Gamma: the text decides which one is gold.
    assert q.gold_doc_ids == [content_id("Gamma", "Gamma is also a film.")] == [DOCS[3].id]
    assert q.answers == ["film", "movie"]


def test_simple_form(tmp_path: Path) -> None:
    recs = [
        {"question": "Where?", "gold_titles": ["Beta"], "answer": "river"},
        {"question": "What?", "gold_titles": ["Alpha"]},
    ]
    qs = load_questions(_write(tmp_path, "s.json", recs), DOCS)
    assert [q.gold_doc_ids for q in qs] == [[DOCS[1].id], [DOCS[0].id]]
    assert qs[1].answers == []


def test_bad_question_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not in the corpus"):
        load_questions(_write(tmp_path, "a.json", [{"question": "Q", "gold_titles": ["Nowhere"]}]), DOCS)
    with pytest.raises(InputError, match="unknown question format"):
        load_questions(_write(tmp_path, "b.json", [{"question": "Q"}]), DOCS)
    with pytest.raises(InputError, match="not found"):
        load_questions(tmp_path / "missing.json", DOCS)
    bad = tmp_path / "c.json"
    bad.write_text("[{")
    with pytest.raises(InputError, match="not a valid JSON"):
        load_questions(bad, DOCS)


def test_normalize_answer() -> None:
    assert normalize_answer("The  Beatles!") == "beatles"
    assert normalize_answer("an Apple, a day") == "apple day"


def _result(doc_ids: list[str], texts: list[str] | None = None) -> RetrievalResult:
    texts = texts or [""] * len(doc_ids)
    hits = [
        ChunkHit(chunk_id=f"c{i}", doc_id=d, title="", text=t, score=1.0 - i / 10, source="dense")
        for i, (d, t) in enumerate(zip(doc_ids, texts, strict=True))
    ]
    return RetrievalResult(corpus="x", query="q", method="dense", chunks=hits, elapsed_ms=1.0)


def test_score_method_metrics() -> None:
    questions = [
        Question(id="1", question="a", gold_doc_ids=["g1", "g2"], answers=["Paris"]),
        Question(id="2", question="b", gold_doc_ids=["g3"], answers=["Rome"]),
    ]
    runs = {
        "a": _result(["x", "g1", "g1", "y", "g2"], ["", "in paris", "", "", ""]),  # doc g1 twice counts once
        "b": _result(["y", "z"]),
    }
    scores, rows = score_method(questions, lambda q, n: runs[q], [1, 2, 5])
    m = scores.metrics
    # q1: ranked docs x, g1, y, g2 -> g1 at 2, g2 at 4; q2: nothing.
    assert m["recall@1"] == 0.0
    assert m["recall@2"] == pytest.approx((1 / 2 + 0) / 2)
    assert m["recall@5"] == pytest.approx((2 / 2 + 0) / 2)
    assert m["all_recall@2"] == 0.0 and m["all_recall@5"] == 0.5
    assert m["coverage@1"] == 0.0 and m["coverage@2"] == 0.5
    assert rows[0]["ranks"] == {"g1": 2, "g2": 4} and rows[1]["ranks"] == {}


def test_recall_at_k_ranks_k_documents_whatever_the_other_ks() -> None:
    """A document cut into many chunks fills the top chunks: recall@k is measured on a retrieval
    deep enough to rank k distinct documents, so it is the same whether or not a larger k is
    measured in the same run, and the method is asked for more chunks until k documents are in."""
    ranking = ["long", "long", "long", "long", "g2", "long", "x", "y", "z", "w", "v", "u"]
    asked: list[int] = []

    def run(question: str, n: int) -> RetrievalResult:
        asked.append(n)
        return _result(ranking[:n])

    questions = [Question(id="1", question="q", gold_doc_ids=["long", "g2"])]
    alone, _ = score_method(questions, run, [2])
    assert alone.metrics["recall@2"] == 1.0  # g2 is the second document, the fifth chunk
    assert asked == [2, 2, 4, 8]  # the untimed first retrieval, then doubled until two documents were ranked
    together, rows = score_method(questions, run, [2, 10])
    assert together.metrics["recall@2"] == alone.metrics["recall@2"]
    assert rows[0]["ranks"] == {"long": 1, "g2": 2}
    # A method that runs out of chunks is not asked again and again.
    asked.clear()
    short, _ = score_method(questions, lambda q, n: run(q, min(n, 3)), [2])
    assert short.metrics["recall@2"] == 0.5 and asked == [2, 2, 3]


def test_the_latency_leaves_out_what_a_first_query_builds_once() -> None:
    """A method's first query builds the snapshot's lazy indexes and warms the models: one
    untimed retrieval comes first, so a short run's p95 is not that one-off cost."""
    calls: list[str] = []

    def run(question: str, n: int) -> RetrievalResult:
        calls.append(question)
        if len(calls) == 1:
            time.sleep(0.5)
        return _result(["g"])

    questions = [Question(id=str(i), question=f"q{i}", gold_doc_ids=["g"]) for i in range(3)]
    scores, _ = score_method(questions, run, [2])
    assert calls == ["q0", "q0", "q1", "q2"]
    assert scores.latency_ms_p95 < 250  # the half-second first call is not among the timed ones


def test_rrf_orders_by_fused_rank() -> None:
    fused = rrf([[1, 2, 3], [3, 1, 4]], 4)
    assert [d for d, _ in fused] == [1, 3, 2, 4]
    assert fused[0][1] == pytest.approx(1 / (RRF_K + 1) + 1 / (RRF_K + 2))


@pytest.fixture(scope="module")
def sample(sample_engine: CueRag) -> CueRag:
    return sample_engine


@pytest.mark.parametrize("method", ["bm25", "hybrid", "ketrag"])
def test_baselines_find_the_obvious_passage(sample: CueRag, method: str) -> None:
    result = sample.query(SAMPLE, "Where was Wolfgang Amadeus Mozart born, Salzburg?", method=method)  # type: ignore[arg-type]
    assert result.method == method
    assert result.chunks[0].doc_id in {"mozart", "salzburg"}
    assert {h.source for h in result.chunks} == {method}
    assert len(result.chunks) <= 5


def test_bm25_scores_descend_and_stop_words_find_nothing(sample: CueRag) -> None:
    result = sample.query(SAMPLE, "Nottingham Forest FA Cup", method="bm25")
    scores = [h.score for h in result.chunks]
    assert scores == sorted(scores, reverse=True)
    assert result.chunks[0].doc_id == "nottingham-forest-fa-cup"
    assert sample.query(SAMPLE, "the of and", method="bm25").chunks == []


def test_eval_command_writes_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUERAG_DATA_DIR", str(tmp_path / "data"))
    questions = _write(
        tmp_path,
        "q.json",
        [
            {
                "question": "When did the 1979-80 European Cup winner win the FA Cup?",
                "gold_titles": ["1979-80 European Cup", "Nottingham Forest in the FA Cup"],
                "answer": "1898",
            },
            {
                "question": "Who was the brother of Lothair II's wife?",
                "gold_titles": ["Teutberga"],
                "answer": "Hucbert",
            },
        ],
    )
    out = tmp_path / "out"
    args = ["eval", "--questions", str(questions), "--corpus", str(SAMPLE_CORPUS)]
    result = CliRunner().invoke(app, [*args, "--methods", "qiter,dense,bm25", "--k", "2,5", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    assert set(data["methods"]) == {"qiter", "dense", "bm25"}
    for metrics in data["methods"].values():
        for key in (
            "recall@2",
            "recall@5",
            "all_recall@2",
            "all_recall@5",
            "coverage@2",
            "coverage@5",
            "latency_ms_p50",
        ):
            assert isinstance(metrics[key], float)
    assert data["methods"]["qiter"]["recall@5"] == 1.0
    assert [q["question"][:4] for q in data["questions"]] == ["When", "Who "]
    assert data["questions"][1]["qiter"]["ranks"] == {load_doc_id("Teutberga"): 2}
    assert (out / "recall.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| qiter |" in (out / "report.md").read_text()
    # Where Q-Iter's time goes, per stage; the baselines have no stages.
    for stage in ("ner", "entity_linking", "beam", "rerank", "links"):
        assert data["methods"]["qiter"][f"{stage}_ms_p50"] >= 0.0
    assert not any(key.endswith("_ms_p50") and key != "latency_ms_p50" for key in data["methods"]["dense"])
    assert "Q-Iter's time by stage" in (out / "report.md").read_text()

    # Another run writing the same folder meanwhile (two evals left at the default --out) never
    # shows in this run's output: it printed the report file back, whoever wrote it last.
    def another_run_writes(run: object, folder: Path) -> None:
        (folder / "report.md").write_text("another run's report\n")

    monkeypatch.setattr("cuerag.evaluation.report.write_chart", another_run_writes)
    # The corpus was indexed once, under a name from the file's content; a second run reuses it.
    again = CliRunner().invoke(app, [*args, "--methods", "dense", "--k", "1", "--out", str(out), "--limit", "1"])
    assert again.exit_code == 0, again.output
    assert "| dense |" in again.stdout and "another run" not in again.stdout
    assert len(json.loads((out / "results.json").read_text())["questions"]) == 1
    # Read-only, the eval scores that index as it is, and writes nothing into the data directory.
    before = _tree(tmp_path / "data")
    shared = CliRunner().invoke(app, ["--read-only", *args, "--methods", "qiter", "--k", "5", "--out", str(out)])
    assert shared.exit_code == 0, shared.output
    assert json.loads((out / "results.json").read_text())["methods"]["qiter"]["recall@5"] == 1.0
    assert _tree(tmp_path / "data") == before


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under root with its size and modification time."""
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_read_only_eval_without_an_index_says_how_to_build_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUERAG_DATA_DIR", str(tmp_path / "data"))
    CliRunner().invoke(app, ["corpora"])  # an empty data directory
    q = _write(tmp_path, "q.json", [{"question": "Who was Teutberga?", "gold_titles": ["Teutberga"]}])
    args = ["--read-only", "eval", "--questions", str(q), "--corpus", str(SAMPLE_CORPUS), "--out", str(tmp_path / "o")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert "has no index in" in result.output and "without --read-only" in result.output
    assert not (tmp_path / "o").exists()


def load_doc_id(title: str) -> str:
    return next(d.id for d in load_paths([SAMPLE_CORPUS]) if d.title == title)


def test_eval_command_refuses_unknown_method(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUERAG_DATA_DIR", str(tmp_path / "data"))
    q = _write(tmp_path, "q.json", [{"question": "x", "gold_titles": ["Teutberga"]}])
    result = CliRunner().invoke(
        app, ["eval", "--questions", str(q), "--corpus", str(SAMPLE_CORPUS), "--methods", "magic"]
    )
    assert result.exit_code == 1
    assert "unknown method 'magic'" in result.output


def test_cli_index_query_delete_drop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUERAG_DATA_DIR", str(tmp_path / "data"))
    runner = CliRunner()
    indexed = runner.invoke(app, ["index", str(SAMPLE_CORPUS), "--corpus", "s", "--json"])
    assert indexed.exit_code == 0, indexed.output
    assert '"documents_added": 15' in indexed.output
    found = runner.invoke(app, ["query", "Who was the brother of Lothair II's wife?", "--corpus", "s", "--json"])
    assert found.exit_code == 0, found.output
    assert "teutberga" in [c["doc_id"] for c in json.loads(found.stdout)["chunks"]]
    manager = ["query", "Where was the manager of Nottingham Forest born?", "--corpus", "s", "--json"]
    linked = json.loads(runner.invoke(app, [*manager, "--entity-links", "0"]).stdout)
    assert [c["doc_id"] for c in linked["chunks"] if c["linked_from"]] == ["brian-clough", "middlesbrough"]
    assert linked["trace"]["linked_chunks"] == 2 and linked["trace"]["entity_linked_chunks"] == 0
    unlinked = ["--title-links", "0", "--entity-links", "0", "--no-query-titles"]
    plain = json.loads(runner.invoke(app, [*manager, *unlinked]).stdout)
    assert all(c["linked_from"] is None for c in plain["chunks"]) and plain["trace"]["linked_chunks"] == 0
    deleted = runner.invoke(app, ["delete", "teutberga", "nope", "--corpus", "s"])
    assert deleted.exit_code == 0, deleted.output
    assert "deleted 1 document (" in deleted.output and "not found: nope" in deleted.output
    again = runner.invoke(app, ["query", "Who was the brother of Lothair II's wife?", "--corpus", "s", "--json"])
    assert "teutberga" not in [c["doc_id"] for c in json.loads(again.stdout)["chunks"]]
    refused = runner.invoke(app, ["drop", "--corpus", "s"])
    assert refused.exit_code == 1 and "--yes" in refused.output
    dropped = runner.invoke(app, ["drop", "--corpus", "s", "--yes"])
    assert dropped.exit_code == 0, dropped.output
    missing = runner.invoke(app, ["query", "x", "--corpus", "s"])
    assert missing.exit_code == 1 and "unknown corpus 's'" in missing.output


def test_answer_accuracy_and_f1() -> None:
    # Accuracy: the normalised gold answer is contained in the normalised prediction.
    assert answer_accuracy("It was the Beatles.", ["The Beatles"]) == 1.0
    assert answer_accuracy("Beatle", ["The Beatles"]) == 0.0
    assert answer_accuracy("1959", ["1898", "1959"]) == 1.0  # best over aliases
    assert answer_accuracy("anything", [""]) == 0.0  # an empty gold answer matches nothing
    # Whole words only: "no" is not in "Norway", nor "1990" in "1990s".
    assert answer_accuracy("Norway", ["no"]) == 0.0 and answer_accuracy("No.", ["no"]) == 1.0
    assert answer_accuracy("a 1990s band", ["1990"]) == 0.0
    # F1 over SQuAD tokens: "won in 1959" vs "1959" -> precision 1/3, recall 1.
    assert answer_f1("won in 1959", ["1959"]) == pytest.approx(2 * (1 / 3) / (1 / 3 + 1))
    assert answer_f1("The Hucbert", ["Hucbert", "Hubert"]) == 1.0
    assert answer_f1("", ["Hucbert"]) == 0.0
    assert answer_f1("nothing alike", ["Hucbert"]) == 0.0


def test_eval_scores_the_llms_answers(models: Models, tmp_path: Path) -> None:
    """With an LLM, each method's top chunks go to the answer prompt and the answers are scored:
    here a stand-in answers '1898' to the first question and 'Lothair' to the second."""
    questions = _write(
        tmp_path,
        "q.json",
        [
            {"question": "When did the 1979-80 European Cup winner win the FA Cup?",
             "gold_titles": ["Nottingham Forest in the FA Cup"], "answer": "1898"},
            {"question": "Who was the brother of Lothair II's wife?", "gold_titles": ["Teutberga"],
             "answer": "Hucbert"},
        ],
    )  # fmt: skip

    def script(body: dict[str, object]) -> str:
        return "1898" if "FA Cup" in str(body["messages"]) else "Lothair"

    with anthropic_standin(script) as standin:
        settings = Settings(
            data_dir=tmp_path / "data",
            llm_provider="anthropic",
            llm_model="claude-standin",
            llm_base_url=standin.url,
            llm_api_key=SecretStr("test-key"),
        )
        engine = CueRag(settings, models=models)
        try:
            run = run_eval(
                engine,
                questions_file=questions,
                corpus_file=SAMPLE_CORPUS,
                methods=["qiter", "dense"],
                ks=[5],
                params=QIterParams(),
                answers=True,
            )
        finally:
            engine.close()
        answer_prompts = [r for r in standin.requests if r.get("system") == ANSWER_SYSTEM_PROMPT]
    for method in ("qiter", "dense"):
        assert run.methods[method]["answer_accuracy"] == 0.5
        assert run.methods[method]["answer_f1"] == 0.5
        usage = run.llm_usage[method]
        assert usage.calls + usage.cached_calls == 2  # one answer per question
        assert usage.completion_tokens == usage.calls  # the stand-in counts one token per word
    # Two methods that retrieve the same chunks for a question send the same prompt: asked once.
    assert len(answer_prompts) == sum(u.calls for u in run.llm_usage.values())
    assert run.llm == "AnthropicProvider:claude-standin"
    assert [q["qiter"]["answer"] for q in run.questions] == ["1898", "Lothair"]
    out = tmp_path / "out"
    write_report(run, out)
    assert "answer_accuracy" in (out / "report.md").read_text()
    assert json.loads((out / "results.json").read_text())["methods"]["dense"]["answer_f1"] == 0.5


def test_eval_answers_need_an_llm(sample: CueRag, tmp_path: Path) -> None:
    questions = _write(tmp_path, "q.json", [{"question": "x", "gold_titles": ["Teutberga"]}])
    with pytest.raises(ParameterError, match="CUERAG_LLM_PROVIDER"):
        run_eval(
            sample,
            questions_file=questions,
            corpus_file=SAMPLE_CORPUS,
            methods=["dense"],
            ks=[5],
            params=QIterParams(),
            answers=True,
        )


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("qiter:lexical_weight=5", "lexical_weight: Input should be less than or equal to 1 (got 5; allowed 0.0..1.0)"),
        ("qiter:k=abc", "bad value 'abc' for k in 'qiter:k=abc'"),
    ],
)
def test_a_bad_method_spec_is_refused_in_the_specs_own_words(spec: str, words: str) -> None:
    """A value out of range or not a value at all is an InputError naming the spec and the range,
    never a raw validation or JSON error."""
    with pytest.raises(InputError) as refused:
        parse_method(spec)
    assert words in str(refused.value) and spec in str(refused.value)
    assert "pydantic" not in str(refused.value) and "--" not in str(refused.value)
