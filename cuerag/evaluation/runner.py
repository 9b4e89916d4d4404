"""Retrieval evaluation: question files in the benchmark forms, gold passages, recall@k.

Question forms: HotpotQA and 2WikiMultiHopQA official (`supporting_facts`), MuSiQue official
(`paragraphs` with `is_supporting`), and the simple form `[{"question", "gold_titles", "answer"?}]`.
Gold passages are matched to the corpus by title where titles are unique, by title and text
otherwise. Recall@k follows HippoRAG: per question |gold ∩ top-k| / |gold|, averaged. With an LLM,
each method's top chunks also go to the answer prompt and the answers are scored as in the paper:
Accuracy (the normalised gold answer is contained in the output) and token F1, SQuAD
normalisation, the best over the gold answer's aliases.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from cuerag.config import QIterParams
from cuerag.engine.facade import CueRag
from cuerag.engine.params import make_params
from cuerag.errors import InputError, NoIndexYet, ParameterError
from cuerag.evaluation.answers import ANSWER_TOP_N, answer_accuracy, answer_f1, normalize_answer
from cuerag.evaluation.questions import Question, QuestionFormat, load_questions
from cuerag.evaluation.report import EvalRun
from cuerag.index.report import Progress
from cuerag.index.sync import load_paths
from cuerag.llm.client import LLMUsage, require_llm
from cuerag.retrieval.answering import generate_answer
from cuerag.retrieval.results import METHODS, Method, RetrievalResult
from cuerag.retrieval.stages import STAGES

# Chunks the answer prompt gets, whatever k the recall is measured at: the paper's N.

Answerer = Callable[[str, RetrievalResult], str]

"""Writes an answer to a question from a retrieval result."""


def ranked_docs(result: RetrievalResult) -> list[str]:
    """Document ids in rank order, each once (a document's best chunk counts)."""
    return list(dict.fromkeys(hit.doc_id for hit in result.chunks))


# The deepest a method is asked to retrieve while looking for k distinct documents: the top of
# N's range, so every method can be asked for it.
MAX_TOP_N = 100

Run = Callable[[str, int], RetrievalResult]

"""Retrieves the top-n chunks for a question."""


class _Retrievals:
    """One question's retrievals, each depth run once."""

    def __init__(self, run: Run, question: str) -> None:
        self._run = run
        self._question = question
        self._done: dict[int, RetrievalResult] = {}
        self.first_ms: float | None = None
        self.first_stages: dict[str, float] = {}

    def at(self, n: int) -> RetrievalResult:
        if n not in self._done:
            started = time.perf_counter()
            self._done[n] = self._run(self._question, n)
            if self.first_ms is None:
                self.first_ms = (time.perf_counter() - started) * 1000
                trace = self._done[n].trace
                self.first_stages = dict(trace.stage_ms) if trace is not None else {}
        return self._done[n]

    def documents(self, k: int) -> RetrievalResult:
        """The retrieval that ranks k distinct documents: N starts at k and doubles while the
        chunks returned hold fewer documents and the method could return more chunks. So the
        recall at k depends on k alone, not on the other cut-offs measured with it, and a page
        cut into many chunks is not crowded out of a top k counted in chunks."""
        n = k
        while True:
            result = self.at(n)
            if len(ranked_docs(result)) >= k or len(result.chunks) < n or n >= MAX_TOP_N:
                return result
            n = min(2 * n, MAX_TOP_N)


class MethodScores(BaseModel):
    metrics: dict[str, float]
    latency_ms_p50: float
    latency_ms_p95: float
    stage_ms_p50: dict[str, float] = {}  # Q-Iter: the median time of each stage (see cuerag.retrieval.qiter.STAGES)


def stage_medians(samples: Sequence[dict[str, float]]) -> dict[str, float]:
    """The median milliseconds of each stage over the queries; a stage a query skipped counts 0."""
    stages = [s for s in STAGES if any(s in x for x in samples)]
    return {s: round(float(np.median([x.get(s, 0.0) for x in samples])), 2) for s in stages}


def score_method(
    questions: Sequence[Question],
    run: Run,
    ks: Sequence[int],
    on_question: Callable[[int], None] | None = None,
    answerer: Answerer | None = None,
) -> tuple[MethodScores, list[dict[str, Any]]]:
    """Run one method over every question; recall@k, all-recall@k and answer coverage@k, and with
    an answerer the answers' accuracy and F1. Each k is measured on a retrieval that ranks k
    distinct documents (see `_Retrievals.documents`); the latency is that of the first
    retrieval made for the largest k. One untimed retrieval comes first: a method's first query
    builds what a snapshot derives on first use (BM25, link edges) and warms the models, a cost
    paid once per index and process, not per query."""
    if questions:
        run(questions[0].question, max(ks))
    per_question = []
    latencies = []
    stages: list[dict[str, float]] = []
    sums = {f"{m}@{k}": 0.0 for m in ("recall", "all_recall", "coverage") for k in ks}
    answerable = 0
    if answerer is not None:
        sums |= {"answer_accuracy": 0.0, "answer_f1": 0.0}
    deepest = max(ks)
    for n, q in enumerate(questions, start=1):
        retrievals = _Retrievals(run, q.question)
        widest = retrievals.documents(deepest)
        latencies.append(retrievals.first_ms or 0.0)
        if retrievals.first_stages:
            stages.append(retrievals.first_stages)
        gold = set(q.gold_doc_ids)
        answers = [normalize_answer(a) for a in q.answers]
        ranks: dict[str, int] = {}
        for k in sorted(ks, reverse=True):
            result = retrievals.documents(k)
            docs = ranked_docs(result)[:k]
            found = {g: docs.index(g) + 1 for g in gold if g in docs}
            ranks |= found  # a document's rank among the top k, from the smallest k that holds it
            sums[f"recall@{k}"] += len(found) / len(gold) if gold else 0.0
            sums[f"all_recall@{k}"] += float(bool(gold) and len(found) == len(gold))
            text = normalize_answer(" ".join(h.text for h in result.chunks[:k]))
            sums[f"coverage@{k}"] += float(any(a and a in text for a in answers))
        row: dict[str, Any] = {
            "id": q.id,
            "gold": q.gold_doc_ids,
            "ranks": ranks,
            "retrieved": ranked_docs(widest)[:deepest],
        }
        if answerer is not None and q.answers:  # a question without a gold answer cannot be scored
            row["answer"] = prediction = answerer(q.question, retrievals.at(ANSWER_TOP_N))
            sums["answer_accuracy"] += answer_accuracy(prediction, q.answers)
            sums["answer_f1"] += answer_f1(prediction, q.answers)
            answerable += 1
        per_question.append(row)
        if on_question:
            on_question(n)
    count = max(len(questions), 1)
    metrics = {k: round(v / (max(answerable, 1) if k.startswith("answer") else count), 4) for k, v in sums.items()}
    lat = np.asarray(latencies) if latencies else np.zeros(1)
    return (
        MethodScores(
            metrics=metrics,
            latency_ms_p50=round(float(np.percentile(lat, 50)), 2),
            latency_ms_p95=round(float(np.percentile(lat, 95)), 2),
            stage_ms_p50=stage_medians(stages),
        ),
        per_question,
    )


def corpus_name_for(path: Path) -> str:
    """Eval corpora are named after their file's content (a folder's: its files' paths and
    contents), so a changed file is a new corpus."""
    digest = hashlib.sha256()
    if path.is_dir():
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(file.relative_to(path).as_posix().encode("utf-8", "surrogateescape") + b"\x00")
            digest.update(hashlib.sha256(file.read_bytes()).digest())
    else:
        digest.update(path.read_bytes())
    return f"eval-{digest.hexdigest()[:12]}"


def parse_method(spec: str) -> tuple[Method, dict[str, Any]]:
    """A method name, optionally with Q-Iter parameters: `qiter:k=5:query_update=false`."""
    name, *assignments = spec.split(":")
    if name not in METHODS:
        raise InputError(f"unknown method {name!r} in {spec!r}; choose from {', '.join(METHODS)}")
    overrides: dict[str, Any] = {}
    for assignment in assignments:
        key, sep, raw = assignment.partition("=")
        if not sep or key not in QIterParams.model_fields or key == "top_n":
            allowed = ", ".join(f for f in QIterParams.model_fields if f != "top_n")
            raise InputError(f"bad parameter {assignment!r} in {spec!r}; use key=value with key one of: {allowed}")
        try:
            overrides[key] = raw.lower() == "true" if raw.lower() in ("true", "false") else json.loads(raw)
        except json.JSONDecodeError:
            raise InputError(f"bad value {raw!r} for {key} in {spec!r}; give a number, true or false") from None
    if overrides and name != "qiter":
        raise InputError(f"parameters apply to qiter only, not {name!r}")
    try:
        make_params(**overrides)  # range errors surface here, before any work
    except ParameterError as exc:  # worded for the method spec, not for the query command's flags
        raise InputError(f"{exc} in {spec!r}") from None
    return name, overrides  # type: ignore[return-value]


class _LLMAnswerer:
    """Answers from the engine's LLM over a result's top chunks, adding up the tokens spent."""

    def __init__(self, engine: CueRag) -> None:
        assert engine.llm is not None
        self._engine = engine
        self._llm = engine.llm
        self.usage = LLMUsage()

    def __call__(self, question: str, result: RetrievalResult) -> str:
        text, spent = generate_answer(
            self._llm,
            question,
            result.chunks[:ANSWER_TOP_N],
            self._engine.text,
            context_tokens=self._engine.settings.llm_context_tokens,
        )
        self.usage += spent
        return text


def run_eval(
    engine: CueRag,
    *,
    questions_file: Path,
    corpus_file: Path,
    methods: Sequence[str],
    ks: Sequence[int],
    params: QIterParams,
    fmt: QuestionFormat = "auto",
    limit: int | None = None,
    progress: Progress | None = None,
    answers: bool = False,
) -> EvalRun:
    """Index the corpus once (reused by later runs: the corpus is named after the file's content),
    then run every method over the same questions. `answers`: score the LLM's answers too. A
    read-only engine indexes nothing: it scores the index an earlier run built of the same content
    (an index shared by several runs, or on a read-only mount)."""
    if answers:
        require_llm(engine.llm, "scoring answers")
    docs = load_paths([corpus_file])
    questions = load_questions(questions_file, docs, fmt)[:limit]
    corpus = corpus_name_for(corpus_file)
    if engine.settings.read_only:
        if corpus not in engine.corpora():
            raise NoIndexYet(corpus_file, engine.settings.data_dir, corpus)
    else:
        engine.index_documents(corpus, docs, progress=progress)
    run_params = params.model_copy(update={"top_n": max(ks)})
    results: dict[str, dict[str, float]] = {}
    llm_usage: dict[str, LLMUsage] = {}
    rows: dict[str, dict[str, Any]] = {q.id: {"question": q.question, "gold": q.gold_doc_ids} for q in questions}
    for spec in methods:
        method, overrides = parse_method(spec)
        spec_params = run_params.model_copy(update=overrides)

        def run(
            question: str, n: int, method: Method = method, spec_params: QIterParams = spec_params
        ) -> RetrievalResult:
            return engine.query(corpus, question, params=spec_params.model_copy(update={"top_n": n}), method=method)

        def tick(n: int, spec: str = spec) -> None:
            if progress:
                progress(f"eval {spec}", n, len(questions))

        answerer = _LLMAnswerer(engine) if answers else None
        scores, per_question = score_method(questions, run, ks, tick, answerer)
        if answerer is not None:
            llm_usage[spec] = answerer.usage
        results[spec] = {
            **scores.metrics,
            "latency_ms_p50": scores.latency_ms_p50,
            "latency_ms_p95": scores.latency_ms_p95,
            **{f"{stage}_ms_p50": ms for stage, ms in scores.stage_ms_p50.items()},
        }
        for row in per_question:
            rows[row["id"]][spec] = {k: row[k] for k in ("ranks", "retrieved", "answer") if k in row}
    return EvalRun(
        questions_file=str(questions_file),
        corpus_file=str(corpus_file),
        corpus=corpus,
        ks=list(ks),
        params=run_params.model_dump(),
        methods=results,
        questions=[{"id": qid, **row} for qid, row in rows.items()],
        llm=engine.llm.name if answers and engine.llm else None,
        llm_usage=llm_usage,
    )
