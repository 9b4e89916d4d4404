"""A living corpus: add, delete, replace and crashes end in the same state as a fresh index."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import EngineFactory, assert_graphs_equal, point_counts

from cuerag.engine.facade import CueRag
from cuerag.graph.snapshot import Graph, load_graph
from cuerag.ingest.documents import Document, make_document

QUESTIONS = [
    "Where was the founder of Company 3 born?",
    "Which company did the person born in City 2 in 1905 found?",
    "Who founded Company 5?",
]


def _docs(n: int, *, offset: int = 0) -> list[Document]:
    """Short biographies that share cities and companies, so entities join many units."""
    docs = []
    for i in range(offset, offset + n):
        text = (
            f"Person {i} was born in City {i % 7} in {1900 + i}. "
            f"Person {i} founded Company {i % 11} with partners from City {(i + 3) % 7}. "
            f"Company {i % 11} later moved to City {(i + 1) % 7}."
        )
        docs.append(make_document(f"Person {i}", text, f"person-{i}"))
    return docs


def _state(engine: CueRag, corpus: str) -> dict[str, Any]:
    g: Graph = engine.graph(corpus)
    # The snapshot the engine updated in memory must equal the graph rebuilt from the store.
    assert_graphs_equal(g, load_graph(engine.store, corpus, dim=g.unit_vectors.shape[1]))
    results = {q: [h.chunk_id for h in engine.query(corpus, q).chunks] for q in QUESTIONS}
    return {
        "chunks": sorted(g.chunk_ids),
        "units": sorted(g.unit_ids),
        "entities": sorted(g.entity_ids),
        "unit_edges": sorted((g.unit_ids[u], g.entity_ids[e]) for u, es in enumerate(g.unit_entities) for e in es),
        "chunk_edges": sorted((g.chunk_ids[c], g.unit_ids[u]) for c, us in enumerate(g.chunk_units) for u in us),
        "points": point_counts(engine, corpus),
        "qiter": results,
    }


@pytest.fixture(scope="module")
def reference(models: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from cuerag.config import Settings

    engine = CueRag(Settings(data_dir=tmp_path_factory.mktemp("ref")), models=models)
    engine.index_documents("c", _docs(60))
    state = _state(engine, "c")
    engine.close()
    return state


def test_adding_in_parts_equals_indexing_at_once(make_engine: EngineFactory, reference: dict[str, Any]) -> None:
    engine = make_engine()
    first = engine.index_documents("c", _docs(25))
    second = engine.index_documents("c", _docs(60))  # the first 25 again, unchanged, and 35 new
    assert (first.documents_added, second.documents_added, second.documents_unchanged) == (25, 35, 25)
    assert second.entities_kept > 0  # entities seen before gain edges instead of new nodes
    assert _state(engine, "c") == reference


def test_delete_then_re_add_restores_the_same_state(make_engine: EngineFactory, reference: dict[str, Any]) -> None:
    engine = make_engine()
    engine.index_documents("c", _docs(60))
    gone = [f"person-{i}" for i in range(40, 60)]
    report = engine.delete_documents("c", [*gone, "no-such-doc"])
    assert report.documents_deleted == gone and report.not_found == ["no-such-doc"]
    assert report.chunks_deleted == 20 and report.units_removed > 0

    fresh = make_engine()
    fresh.index_documents("c", _docs(40))
    assert _state(engine, "c") == _state(fresh, "c")  # no stale units or entities left behind

    engine.index_documents("c", _docs(20, offset=40))
    assert _state(engine, "c") == reference


def test_replacing_a_document_leaves_no_trace_of_the_old_text(
    make_engine: EngineFactory, reference: dict[str, Any]
) -> None:
    engine = make_engine()
    docs = _docs(60)
    changed = [
        *docs[:10],
        make_document("Person 10", "Person 10 was a sailor from Port Nowhere.", "person-10"),
        *docs[11:],
    ]
    engine.index_documents("c", changed)
    report = engine.index_documents("c", docs)  # person-10 back to its original text
    assert (report.documents_replaced, report.documents_unchanged) == (1, 59)
    assert _state(engine, "c") == reference
    assert not any("Port Nowhere" in t for t in engine.graph("c").unit_texts)


class _CrashingStore:
    """The real store, but the process 'dies' (an exception) before the Nth call of one of its
    methods (`upsert` unless told)."""

    def __init__(self, store: Any, fail_at: int, method: str = "upsert") -> None:
        self._store = store
        self._left = fail_at
        self._method = method

    def __getattr__(self, attr: str) -> Any:
        real = getattr(self._store, attr)
        if attr != self._method:
            return real

        def dying(*args: Any, **kwargs: Any) -> Any:
            if self._left == 0:
                raise KeyboardInterrupt("simulated crash")
            self._left -= 1
            return real(*args, **kwargs)

        return dying


@pytest.mark.parametrize("fail_at", [0, 1, 2, 3, 5])
def test_a_run_interrupted_between_writes_is_completed_by_a_rerun(
    make_engine: EngineFactory, reference: dict[str, Any], fail_at: int, tmp_path: Path
) -> None:
    data = tmp_path / "crash"
    engine = make_engine(data_dir=data)
    engine.index_documents("c", _docs(20))  # an earlier run that completed
    before = _state(engine, "c")
    engine.store = _CrashingStore(engine.store, fail_at)  # type: ignore[assignment]
    import cuerag.index.pipeline as index_module

    small_batches = pytest.MonkeyPatch()
    small_batches.setattr(index_module, "_WRITE_BATCH", 16)  # many write batches: many crash points
    try:
        with pytest.raises(KeyboardInterrupt):
            engine.index_documents("c", _docs(60))
    finally:
        small_batches.undo()
    engine.store = engine.store._store  # type: ignore[attr-defined]
    engine.close()

    reopened = make_engine(data_dir=data)
    seen = _state(reopened, "c")
    # What the interrupted run wrote is not part of the graph (its points may be in the store).
    assert {k: v for k, v in seen.items() if k != "points"} == {k: v for k, v in before.items() if k != "points"}
    reopened.index_documents("c", _docs(60))
    assert _state(reopened, "c") == reference


@pytest.mark.parametrize("fail_at", [1, 2])
def test_a_first_run_killed_between_creating_collections_leaves_no_half_corpus(
    make_engine: EngineFactory, reference: dict[str, Any], fail_at: int, tmp_path: Path
) -> None:
    """A corpus is listed once its chunks collection exists, so that one is created last: a run
    killed between two creations leaves nothing a reader would open and fail on."""
    data = tmp_path / "data"
    engine = make_engine(data_dir=data)
    engine.store = _CrashingStore(engine.store, fail_at, "create_collection")  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        engine.index_documents("c", _docs(60))
    engine.store = engine.store._store  # type: ignore[attr-defined]
    engine.close()

    reopened = make_engine(data_dir=data)
    assert reopened.corpora() == []
    reopened.index_documents("c", _docs(60))
    assert _state(reopened, "c") == reference


def test_sigkill_during_indexing_then_rerun(tmp_path: Path, make_engine: EngineFactory) -> None:
    """A real `cuerag index` process killed with SIGKILL at several moments; each time the corpus
    stays queryable and a rerun ends in the state of an uninterrupted run."""
    corpus_file = tmp_path / "docs.json"
    corpus_file.write_text(json.dumps([d.model_dump() for d in _docs(60)]))
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUERAG_")}
    env["CUERAG_DATA_DIR"] = str(data)
    cmd = [sys.executable, "-m", "cuerag.cli.app", "index", str(corpus_file), "--corpus", "c"]
    for delay in (2.0, 6.0, 9.0):
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        engine = make_engine(data_dir=data)
        if "c" in engine.corpora():
            engine.query("c", QUESTIONS[0])  # queryable whatever the moment of the kill
        engine.close()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    # The uninterrupted run of the same file: a file's documents carry its provenance, which is part
    # of their stored version (cuerag.graph.ids.labelled_version_id), so `reference` (the same
    # documents given inline) differs from them in chunk ids alone.
    uninterrupted = make_engine(data_dir=tmp_path / "uninterrupted")
    uninterrupted.index_paths("c", [corpus_file])
    assert _state(make_engine(data_dir=data), "c") == _state(uninterrupted, "c")


def test_thousands_of_tiny_documents(make_engine: EngineFactory) -> None:
    engine = make_engine()
    docs = [make_document(f"T{i}", f"Item {i} is tiny.", f"tiny-{i}") for i in range(1500)]
    report = engine.index_documents("tiny", docs)
    assert report.documents_added == 1500 and report.totals["chunks"] == 1500
    assert report.totals["units"] == 1500  # every sentence differs
    assert engine.query("tiny", "Which item is tiny, item 742?", method="dense").chunks


def test_a_huge_document_is_chunked_with_shared_units(make_engine: EngineFactory) -> None:
    paragraph = " ".join(f"Sentence number {i} talks about the river Tees in England." for i in range(40))
    text = "\n\n".join(paragraph for _ in range(120))  # ~90k tokens, one document
    engine = make_engine()
    report = engine.index_documents("huge", [make_document("Tees", text, "tees")])
    g = engine.graph("huge")
    assert report.totals["chunks"] == len(g.chunk_ids) > 50
    windows = engine.text.chunk("Tees", text, max_tokens=1200, overlap=100)
    assert [w.text for w in windows] == g.chunk_texts
    assert max(w.tokens for w in windows) == 1200
    # Re-encoding a window's text can merge a token across its cut edge: one token at most.
    assert all(engine.text.count_tokens(c) <= 1201 for c in g.chunk_texts)
    # The same 40 sentences recur in every chunk: they are 40 unit nodes (plus the pieces a
    # window edge cuts), each linked to many chunks, not thousands of copies.
    assert len(g.unit_ids) < 200
    assert max(len(cs) for cs in g.unit_chunks) > 50


# ---- issue 14: real SIGKILLs at chosen moments ---------------------------------------------------

# Indexes the documents of a JSON file into corpus "c" and SIGKILLs itself at the named moment:
# just before the first chunk write (the run's units and entities are stored, none reachable), or
# just before the replaced chunks are deleted (a document's new and old chunks both stored).
_KILLED_RUN = """
import json, os, signal, sys
from cuerag import CueRag, Document, Settings
data, docs_file, moment = sys.argv[1:4]
engine = CueRag(Settings(data_dir=data))
store = engine.store

class KillingStore:
    def __getattr__(self, attr):
        return getattr(store, attr)

    def upsert(self, name, points):
        if moment == "first-chunk-write" and name.endswith("--chunks"):
            os.kill(os.getpid(), signal.SIGKILL)
        store.upsert(name, points)

    def delete(self, name, ids):
        if moment == "old-chunks-delete" and name.endswith("--chunks") and ids:
            os.kill(os.getpid(), signal.SIGKILL)
        store.delete(name, ids)

engine.store = KillingStore()
engine.index_documents("c", [Document(**d) for d in json.load(open(docs_file))])
"""


def _killed_run(tmp_path: Path, data: Path, docs: list[Document], moment: str) -> None:
    docs_file = tmp_path / f"{moment}.json"
    docs_file.write_text(json.dumps([d.model_dump() for d in docs]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUERAG_")}
    env["HF_HUB_OFFLINE"] = "1"
    root = str(Path(__file__).parent.parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_RUN, str(data), str(docs_file), moment],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]


def _live_units(engine: CueRag, query: str, k: int) -> list[str]:
    hits = engine.retriever("c").search_units(query, k)
    g = engine.graph("c")
    assert all(h.unit_id in g.unit_pos for h in hits)  # only units the graph holds
    return [h.unit_id for h in hits]


def test_orphans_of_a_killed_run_never_push_live_units_out(
    tmp_path: Path, models: Any, make_engine: EngineFactory
) -> None:
    """SIGKILL after a run stored its units and entities but before any chunk (issue 14, item 7):
    a read-only server still finds k live units, a writable one deletes the orphans on opening,
    and a delete's report counts the orphans it removed."""
    from cuerag.config import Settings

    data = tmp_path / "data"
    first = make_engine(data_dir=data)
    first.index_documents("c", _docs(20))
    first.close()
    _killed_run(tmp_path, data, _docs(60), "first-chunk-write")

    queries = ["Who was born in City 3?", "Which company moved to City 5?", "Person 47 founded Company 3"]
    reader = CueRag(Settings(data_dir=data, read_only=True), models=models)
    try:
        g = reader.graph("c")
        stored = point_counts(reader, "c")
        orphans = {"units": stored["units"] - len(g.unit_ids), "entities": stored["entities"] - len(g.entity_ids)}
        assert orphans["units"] > 50 and stored["chunks"] == len(g.chunk_ids)  # the killed run's, unreachable
        for query in queries:
            assert len(_live_units(reader, query, 10)) == 10, query
            assert len(reader.retriever("c").dense(query, 10).chunks) == 10
        assert point_counts(reader, "c") == stored  # read-only: nothing deleted
        own = _units_only_in(reader, "person-0")
    finally:
        reader.close()

    writer = make_engine(data_dir=data)
    report = writer.delete_documents("c", ["person-0"])  # the first write after the restart
    assert report.units_removed == orphans["units"] + own
    assert report.entities_removed >= orphans["entities"]
    g = writer.graph("c")
    assert point_counts(writer, "c") == {
        "chunks": len(g.chunk_ids),
        "units": len(g.unit_ids),
        "entities": len(g.entity_ids),
    }
    for query in queries:
        assert len(_live_units(writer, query, 10)) == 10, query


def _units_only_in(engine: CueRag, doc_id: str) -> int:
    g = engine.graph("c")
    mine = {c for c, d in enumerate(g.chunk_docs) if d == doc_id}
    return sum(1 for chunks in g.unit_chunks if set(chunks) <= mine)


def test_orphans_are_deleted_when_a_corpus_is_opened(tmp_path: Path, make_engine: EngineFactory) -> None:
    data = tmp_path / "data"
    first = make_engine(data_dir=data)
    first.index_documents("c", _docs(20))
    first.close()
    _killed_run(tmp_path, data, _docs(60), "first-chunk-write")
    engine = make_engine(data_dir=data)
    g = engine.graph("c")  # opening it clears what the killed run left
    assert point_counts(engine, "c") == {"chunks": 20, "units": len(g.unit_ids), "entities": len(g.entity_ids)}
    assert len(_live_units(engine, "Who was born in City 3?", 10)) == 10


def test_sigkill_between_a_replaced_documents_new_and_old_chunks(tmp_path: Path, make_engine: EngineFactory) -> None:
    """SIGKILL after a replaced document's new chunk is stored and before its old one is deleted
    (issue 14, item 11): after the restart one version is served, the new one, never both."""
    data = tmp_path / "data"
    docs = _docs(10)
    first = make_engine(data_dir=data)
    first.index_documents("c", docs)
    first.close()
    changed = [*docs[:3], make_document("Person 3", "Person 3 was a sailor from Port Nowhere.", "person-3"), *docs[4:]]
    _killed_run(tmp_path, data, changed, "old-chunks-delete")

    engine = make_engine(data_dir=data)
    g = engine.graph("c")
    served = [g.chunk_texts[c] for c, d in enumerate(g.chunk_docs) if d == "person-3"]
    assert served == ["Person 3 was a sailor from Port Nowhere."]
    assert point_counts(engine, "c")["chunks"] == 10  # the old version's chunk is gone from the store
    for query in ("Where was Person 3 born?", "Who was a sailor from Port Nowhere?"):
        docs_hit = [h.doc_id for h in engine.query("c", query, method="dense").chunks]
        assert docs_hit.count("person-3") <= 1
    # A rerun with the same documents has nothing left to do.
    report = engine.index_documents("c", changed)
    assert (report.documents_unchanged, report.chunks_added) == (10, 0)


def test_replacing_one_chunk_of_a_long_document_keeps_one_version(models: Any, tmp_path: Path) -> None:
    """A document of several chunks whose last one changes: the unchanged chunks are stored again
    with the new version's labels, so the graph (in memory, and rebuilt from the store) serves
    every chunk of the new version and nothing of the old."""
    from cuerag.config import Settings

    sentences = [f"Station {n} opened on line {n % 4} in {1900 + n}." for n in range(40)]
    engine = CueRag(Settings(data_dir=tmp_path / "data", chunk_tokens=64, chunk_overlap=0), models=models)
    try:
        engine.index_documents("c", [make_document("Stations", " ".join(sentences), "stations")])
        before = engine.graph("c").chunk_texts
        changed = " ".join([*sentences[:-1], "Station 39 closed in 1999."])
        report = engine.index_documents("c", [make_document("Stations", changed, "stations")])
        kept = report.chunks_kept
        assert report.documents_replaced == 1 and kept > 2 and report.chunks_added >= 1
        g = engine.graph("c")
        assert g.chunk_texts[:kept] == before[:kept] and "closed in 1999" in " ".join(g.chunk_texts[kept:])
        assert not any("Station 39 opened" in t for t in g.chunk_texts)
        assert_graphs_equal(g, load_graph(engine.store, "c", dim=g.unit_vectors.shape[1]))
        assert point_counts(engine, "c")["chunks"] == len(g.chunk_ids) == kept + report.chunks_added
        assert g.points is not None
        assert len({p.payload["doc_version"] for p in g.points.chunks.values()}) == 1
    finally:
        engine.close()
