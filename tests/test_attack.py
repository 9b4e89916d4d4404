"""Outside review of 63a97fe..16c4ad2: each test states what the change claims and fails where the
code does otherwise."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from cuerag.config import Settings
from cuerag.documents import Document
from cuerag.engine import CueRag
from cuerag.models import Models


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


def test_a_bulk_index_encode_keeps_every_core_whatever_the_batch_size(
    models: Models, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README *Threads*: "a single short batch (a query, its mentions) runs torch on one thread ...
    and bulk encodes keep every core". The shortcut is taken for any call of at most
    `embed_batch_size` texts, so with CUERAG_EMBED_BATCH_SIZE >= 512 (the indexer's slice) every
    indexing encode runs on one thread; at the default 64 so does every stage's last slice (64
    whole chunks of up to 256 tokens is no query)."""
    import torch

    from cuerag.models import SentenceTransformerEmbedder

    embedder = models.embedder
    assert isinstance(embedder, SentenceTransformerEmbedder)
    model = embedder._model
    seen: list[tuple[int, int]] = []  # (tokens in the forward pass, torch threads)
    forward = model.forward

    def spy(features: dict, *args: object, **kwargs: object) -> object:  # type: ignore[type-arg]
        seen.append((int(features["attention_mask"].sum()), torch.get_num_threads()))
        return forward(features, *args, **kwargs)

    monkeypatch.setattr(model, "forward", spy)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    engine = CueRag(Settings(data_dir=tmp_path, embed_batch_size=512), models=models)
    try:
        docs = [
            Document(id=f"d{n}", title=f"Line {n}", text=" ".join(f"Stop {n}-{k} is on line {k}." for k in range(10)))
            for n in range(60)
        ]  # 600 sentences, 60 chunks: an index run, no query
        engine.index_documents("c", docs)
        bulk = [threads for tokens, threads in seen if tokens >= 2000]  # no query is that long
        assert bulk and set(bulk) == {2}, seen
    finally:
        torch.set_num_threads(before)
        engine.close()


def test_a_thread_that_first_touches_torch_during_a_one_thread_encode_keeps_one_thread() -> None:
    """`_one_thread` says no other forward pass sees the change. torch keeps the thread count per
    OS thread (OpenMP) and initialises a thread's count lazily from the global one at its first
    parallel op: a thread whose first torch call lands while a query holds the count at 1 stays
    at 1 for its life, after the query has restored 2. (Mechanism shown with torch alone: in the
    shipped server every first torch call of a thread seems to go through the embedder's lock,
    which serialises it with `_one_thread`; a CrossEncoder reranker or any other torch user on a
    fresh thread would not.)"""
    import torch

    from cuerag.models import _one_thread

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    inside, release = threading.Event(), threading.Event()
    seen: dict[str, int] = {}

    def query() -> None:
        with _one_thread(torch):
            inside.set()
            release.wait(10)

    def other() -> None:
        inside.wait(10)
        torch.ones(1_000_000).exp().sum()  # a first op big enough to run in parallel
        release.set()
        q.join()
        seen["after"] = torch.get_num_threads()

    try:
        q = threading.Thread(target=query)
        o = threading.Thread(target=other)
        q.start(), o.start()
        q.join(), o.join()
        assert seen["after"] == 2, seen
    finally:
        torch.set_num_threads(before)


def _graph(unit_texts: list[str], chunk_units: list[list[int]], links: list[list[dict[str, str]]], docs: list[str]):
    resolved = [{n: link["doc_id"] for n, link in enumerate(ls)} for ls in links]
    return SimpleNamespace(
        chunk_links=resolved,
        chunk_units=chunk_units,
        unit_texts=unit_texts,
        unit_chunks=[[c for c, us in enumerate(chunk_units) if u in us] for u in range(len(unit_texts))],
        chunk_titles=docs,
        title_index=SimpleNamespace(named_in=lambda text, exclude_titles_of=None: []),
        chunk_payload=lambda c: {"links": links[c]},
        doc_chunks=lambda: {d: [c] for c, d in enumerate(docs)},
    )


def test_a_hyperlink_is_an_edge_of_its_own_sentence_only() -> None:
    """LinkEdges attributes a chunk's hyperlink to every sentence of the chunk that holds its
    anchor text as words. "[here](b.md)" then makes every sentence of the chunk that says "here"
    hop to b, at weight 1 (a hyperlink outweighs any title mention)."""
    from cuerag.link_edges import LinkEdges

    units = ["The manual is here.", "We are here to stay and the weather is fine."]
    g = _graph(units, [[0, 1], []], [[{"text": "here", "doc_id": "b"}], []], ["a", "b"])
    edges = LinkEdges(g, lambda: None)  # type: ignore[arg-type]
    assert [t.title for t in edges.from_unit(0)] == ["b"]
    assert edges.from_unit(1) == [], "a sentence with no link hops along the other sentence's link"


def test_a_link_hop_weight_below_one_does_not_raise_a_units_score() -> None:
    """Retriever.top_units multiplies each unit's similarity by its link's weight (a title's
    specificity, in (0, 1]). A similarity can be negative (the path's vector has lost the units
    already chosen, `query_update`), and then a smaller weight raises the score: a unit with a lower
    similarity AND a less specific title outranks one better on both counts."""
    from cuerag.retrieval import Retriever

    unit_vectors = np.array([[-0.5, np.sqrt(0.75)], [-0.6, np.sqrt(0.64)]], dtype=np.float32)
    r = Retriever.__new__(Retriever)
    r.graph = SimpleNamespace(unit_vectors=unit_vectors)  # type: ignore[assignment]
    r.subset = None  # type: ignore[assignment]
    vector = np.array([1.0, 0.0], dtype=np.float32)
    # unit 0: similarity -0.5, specific title (weight 1); unit 1: similarity -0.6, common title (0.1)
    ranked = r.top_units([0, 1], vector, 1, weights=[1.0, 0.1])
    assert ranked[0][0] == 0, ranked


def test_a_hyperlink_to_a_long_document_is_capped_as_a_title_mention_is() -> None:
    """A title mention leads to at most `per_title` (64) of the document's chunks (TitleIndex.named_in:
    "a long document's many chunks share its title"); a hyperlink to the same document leads to all
    of them, and `_link_hops` then ranks every unit of the document for every kept path at every
    depth (measured: a 5,000-chunk document of 200,000 units costs 0.33 s and a 320 MB transient
    copy of unit vectors per hop). A hostile document only has to link to a long one."""
    from cuerag.link_edges import LinkEdges

    docs = ["a"] + ["book"] * 1000
    g = _graph(
        ["See the book."] + [f"Page {n}." for n in range(1000)],
        [[0]] + [[n + 1] for n in range(1000)],
        [[{"text": "the book", "doc_id": "book"}]] + [[] for _ in range(1000)],
        docs,
    )
    g.doc_chunks = lambda: {"a": [0], "book": list(range(1, 1001))}
    (target,) = LinkEdges(g, lambda: None).from_unit(0)  # type: ignore[arg-type]
    assert len(target.chunks) <= 64, len(target.chunks)


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
