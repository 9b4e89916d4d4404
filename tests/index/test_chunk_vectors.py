"""Chunk vectors derived from their units' token sums (`chunk_vectors=derived`)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from cuerag.config import Settings
from cuerag.engine.facade import CueRag
from cuerag.errors import StoreError
from cuerag.index.chunk_vectors import DERIVED, EMBEDDED, derive_chunk_vectors
from cuerag.ingest.documents import Document
from cuerag.models.base import Pooled, mean_pooling, normalise
from cuerag.models.loading import Models
from cuerag.text.tools import TextTools

DOC = Document(
    id="lovelace",
    title="Ada Lovelace",
    text="Ada Lovelace wrote notes on the Analytical Engine. She was the daughter of Lord Byron. "
    "Her notes hold what is called the first published algorithm.",
)


def test_a_derived_vector_is_the_token_weighted_mean_of_its_parts() -> None:
    rng = np.random.default_rng(0)
    means = rng.normal(size=(3, 8)).astype(np.float32)  # each part's mean-pooled vector
    counts = np.array([4.0, 10.0, 2.0], dtype=np.float32)
    pooled = Pooled(means * counts[:, None], counts)
    got = derive_chunk_vectors([[0, 1, 2], [1], [2, 2], []], pooled)
    weighted = (means * counts[:, None]).sum(axis=0) / counts.sum()
    assert np.allclose(got[0], weighted / np.linalg.norm(weighted), atol=1e-6)
    assert np.allclose(got[1], means[1] / np.linalg.norm(means[1]), atol=1e-6)
    assert np.allclose(got[2], means[2] / np.linalg.norm(means[2]), atol=1e-6)  # a repeated part counts twice
    assert not got[3].any()
    # Cut at 12 tokens: the first part whole, 8 of the second's 10, none of the third.
    cut = derive_chunk_vectors([[0, 1, 2]], pooled, max_tokens=12)
    expected = means[0] * 4 + means[1] * 8
    assert np.allclose(cut[0], expected / np.linalg.norm(expected), atol=1e-6)


def test_pooled_sums_give_the_embedders_vectors(models: Models) -> None:
    pooler = mean_pooling(models.embedder)
    assert pooler is not None  # the shipped MiniLM pools by mean
    texts = ["Ada Lovelace", DOC.text, "A long text. " + "It repeats itself past the window. " * 60]
    pooled = pooler.pooled(texts, batch_size=2)
    assert np.sum(pooled.vectors * models.embedder.encode(texts), axis=1).min() > 0.999
    assert pooled.counts[0] < pooled.counts[1] < pooled.counts[2] == pooler.max_tokens
    assert pooler.pooled([]).sums.shape == (0, pooler.dim)


def test_an_index_stores_chunk_vectors_derived_from_its_units(models: Models, tmp_path: Path) -> None:
    engine = CueRag(Settings(data_dir=tmp_path, chunk_vectors="derived"), models=models)
    try:
        report = engine.index_documents("c", [DOC])
        assert report.chunks_added == 1
        assert report.chunk_vectors == DERIVED
        points = engine.graph("c").points
        assert points is not None
        (chunk,) = points.chunks.values()
        assert chunk.payload["chunk_vectors"] == DERIVED
        pooler = mean_pooling(models.embedder)
        assert pooler is not None
        sentences = TextTools().sentences(DOC.text)
        assert len(sentences) == 3
        parts = pooler.pooled([DOC.title, *sentences])
        # The weighted mean of the title's and the units' mean-pooled vectors (sums / counts).
        means = parts.sums / parts.counts[:, None]
        expected = normalise((means * parts.counts[:, None]).sum(axis=0))[0]
        assert float(np.dot(chunk.vector, expected)) > 0.9999
        # The stored unit vectors are the units' own.
        for sentence, vector in zip(sentences, parts.vectors[1:], strict=True):
            stored = next(u for u in points.units.values() if u.payload["text"] == sentence)
            assert float(np.dot(stored.vector, vector)) > 0.9999
        # Close to the vector of the chunk embedded whole, not equal to it.
        whole = models.embedder.encode([f"{DOC.title}\n{DOC.text}"])[0]
        assert 0.8 < float(np.dot(chunk.vector, whole)) < 0.9999
        # A later document holding a unit stored before: that unit's sums are computed again.
        later = Document(id="later", title="Byron", text=f"{sentences[1]} He wrote Don Juan.")
        engine.index_documents("c", [later])
        points = engine.graph("c").points
        assert points is not None
        (second,) = [c for c in points.chunks.values() if c.payload["doc_id"] == "later"]
        parts = pooler.pooled(["Byron", sentences[1], "He wrote Don Juan."])
        assert float(np.dot(second.vector, normalise(parts.sums.sum(axis=0))[0])) > 0.9999
    finally:
        engine.close()


@pytest.mark.parametrize(("first", "then"), [("derived", "embedded"), ("embedded", "derived")])
def test_a_corpus_keeps_one_way_of_making_chunk_vectors(models: Models, tmp_path: Path, first: str, then: str) -> None:
    built = CueRag(Settings(data_dir=tmp_path, chunk_vectors=first), models=models)  # type: ignore[arg-type]
    built.index_documents("c", [DOC])
    built.close()
    other = CueRag(Settings(data_dir=tmp_path, chunk_vectors=then), models=models)  # type: ignore[arg-type]
    try:
        with pytest.raises(StoreError, match=f"chunk vectors made {first}.*CUERAG_CHUNK_VECTORS={first}"):
            other.index_documents("c", [Document(id="b", title="B", text="Another text.")])
        # Queries are embedded alike either way: answered, no refusal.
        assert other.query("c", "Who wrote notes on the engine?", method="dense").chunks
    finally:
        other.close()
    assert {first, then} == {DERIVED, EMBEDDED}


def test_derived_chunk_vector_of_a_chunk_with_no_unit_and_no_head_is_not_zero(models: Models, tmp_path: Path) -> None:
    """CUERAG_CHUNK_VECTORS=derived: a chunk whose sentences are all dropped (punctuation only) and
    that has no title gets an all-zero vector (no parts to sum), where `embedded` gives it a real
    one. Dense search can then never rank it above 0, whatever the query."""
    docs = [Document(id="p", title="", text="!!! ??? ..."), Document(id="a", title="Ada", text="Ada wrote notes.")]
    engine = CueRag(Settings(data_dir=tmp_path, chunk_vectors="derived"), models=models)
    try:
        engine.index_documents("c", docs)
        g = engine.graph("c")
        norms = dict(zip(g.chunk_docs, np.linalg.norm(g.chunk_vectors, axis=1), strict=True))
        assert norms["p"] > 0.5, norms
    finally:
        engine.close()


def test_every_stage_a_derived_index_reports_is_one_the_job_progress_knows(models: Models, tmp_path: Path) -> None:
    """With CUERAG_CHUNK_VECTORS=derived the indexer reports a stage "embed chunk parts" that the MCP
    job's stage list (tools.index_corpus._STAGES) does not hold. `JobProgress.progress` files an
    unknown stage under the last one ("store") and marks every stage before it done, NER and
    entity embedding included: a background job's percent jumps to 83-100 % right after the units
    are embedded, while NER and the entities are still to come, and never goes back."""
    import anyio

    from tools.index_corpus import index_stages
    from tools.jobs import JobHandle

    engine = CueRag(Settings(data_dir=tmp_path, chunk_vectors="derived"), models=models)
    seen: list[str] = []
    try:
        text = "Ada Lovelace wrote notes on the engine. She met Babbage in London."
        engine.index_documents("c", [Document(id="a", title="Ada", text=text)], progress=lambda s, d, t: seen.append(s))
        stages = index_stages(engine)
        # The job's percent, replayed over the reports as the job's handle computes it.
        job = SimpleNamespace(percent=0.0, stage="", touch=lambda: None)
        handle = JobHandle(job, stages)  # type: ignore[arg-type]
        shown: list[tuple[str, float]] = []
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(anyio.from_thread, "run_sync", lambda fn, *a: fn(*a))
            for stage in seen:
                handle.progress(stage, 1, 1)
                shown.append((stage, job.percent))
        before_ner = [p for stage, p in shown[: seen.index("embed entities")] if stage != "ner"]
        assert max(before_ner) < 80, shown
        unknown = sorted(set(seen) - set(stages.order))
        assert not unknown, unknown
    finally:
        engine.close()
