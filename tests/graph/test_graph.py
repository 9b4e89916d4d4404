"""The multi-partite graph: structure, identity of units and entities, rebuilding from the store,
idempotent re-indexing, replacement of a changed document, and crash leftovers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import SAMPLE, SAMPLE_CORPUS, EngineFactory, assert_graphs_equal, point_counts

from cuerag.engine.facade import CueRag
from cuerag.engine.params import make_params
from cuerag.graph.ids import entity_point_id, unit_point_id
from cuerag.graph.schema import ENTITIES, UNITS, collection_name
from cuerag.graph.snapshot import load_graph
from cuerag.ingest.documents import Document, make_document
from cuerag.store.base import StoredPoint
from cuerag.text.entities import normalize_entity
from cuerag.text.tools import TextTools

SAMPLE_RECORDS = json.loads(SAMPLE_CORPUS.read_text())
SAMPLE_DOCS = [make_document(r["title"], r["text"], r["id"]) for r in SAMPLE_RECORDS]


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


# ---- structure of the sample graph (both backends) ----------------------------------------------


def test_sample_graph_nodes(sample_engine_any: CueRag) -> None:
    g = sample_engine_any.graph(SAMPLE)
    assert sorted(set(g.chunk_docs)) == sorted(r["id"] for r in SAMPLE_RECORDS)
    assert len(g.chunk_ids) == len(SAMPLE_RECORDS)  # every sample passage fits one chunk
    tools = TextTools()
    all_sentences = {s for r in SAMPLE_RECORDS for s in tools.sentences(r["text"])}
    assert set(g.unit_texts) == all_sentences
    assert len(g.unit_ids) == len(all_sentences)
    assert g.unit_ids == _dedupe(g.unit_ids) and g.entity_ids == _dedupe(g.entity_ids)
    assert all(unit_point_id(t) == u for u, t in zip(g.unit_ids, g.unit_texts, strict=True))
    assert g.unit_vectors.shape == (len(g.unit_ids), sample_engine_any.models.embedder.dim)
    assert np.allclose(np.linalg.norm(g.unit_vectors, axis=1), 1.0, atol=1e-4)
    assert np.allclose(np.linalg.norm(g.chunk_vectors, axis=1), 1.0, atol=1e-4)
    info = sample_engine_any.info(SAMPLE)
    assert (info.documents, info.chunks, info.units, info.entities) == (
        len(SAMPLE_RECORDS),
        len(g.chunk_ids),
        len(g.unit_ids),
        len(g.entity_ids),
    )


def test_chunk_units_are_its_sentences_in_order(sample_engine_any: CueRag) -> None:
    g = sample_engine_any.graph(SAMPLE)
    tools = TextTools()
    for c, text in enumerate(g.chunk_texts):
        assert [g.unit_texts[u] for u in g.chunk_units[c]] == _dedupe(tools.sentences(text))


def test_unit_entities_are_its_named_entities(sample_engine_any: CueRag) -> None:
    g = sample_engine_any.graph(SAMPLE)
    mentions = sample_engine_any.models.ner.extract(g.unit_texts)
    for u, found in enumerate(mentions):
        named = [entity_point_id(s) for s, _ in found if normalize_entity(s)]
        # Every unit also mentions the entity named by the title of each chunk that holds it.
        titles = [entity_point_id(g.chunk_titles[c]) for c in g.unit_chunks[u]]
        expected = _dedupe(named + titles)
        assert [g.entity_ids[e] for e in g.unit_entities[u]] == expected, g.unit_texts[u]


def test_title_entities_can_be_switched_off(make_engine: EngineFactory, sample_path: Path) -> None:
    engine = make_engine()
    engine.settings = engine.settings.model_copy(update={"title_entities": False})
    engine.index_paths("plain", [sample_path])
    g = engine.graph("plain")
    assert "TITLE" not in g.entity_labels
    mentions = engine.models.ner.extract(g.unit_texts)
    for u, found in enumerate(mentions):
        expected = _dedupe([entity_point_id(s) for s, _ in found if normalize_entity(s)])
        assert [g.entity_ids[e] for e in g.unit_entities[u]] == expected
    # Turning the setting back on re-indexes every document instead of skipping it as unchanged.
    engine.settings = engine.settings.model_copy(update={"title_entities": True})
    report = engine.index_paths("plain", [sample_path])
    assert report.documents_replaced == g.sizes["documents"]
    assert report.documents_unchanged == 0
    assert "TITLE" in engine.graph("plain").entity_labels


def test_every_unit_and_entity_is_reachable(sample_engine_any: CueRag) -> None:
    g = sample_engine_any.graph(SAMPLE)
    assert g.unit_ids and g.entity_ids
    assert all(len(chunks) >= 1 for chunks in g.unit_chunks)
    assert all(len(units) >= 1 for units in g.entity_units)


def test_edges_are_mirrored(sample_engine_any: CueRag) -> None:
    g = sample_engine_any.graph(SAMPLE)
    chunk_unit = {(c, u) for c, units in enumerate(g.chunk_units) for u in units}
    unit_chunk = {(c, u) for u, chunks in enumerate(g.unit_chunks) for c in chunks}
    assert chunk_unit == unit_chunk
    assert len(chunk_unit) == sum(map(len, g.chunk_units)) == sum(map(len, g.unit_chunks))
    unit_entity = {(u, e) for u, ents in enumerate(g.unit_entities) for e in ents}
    entity_unit = {(u, e) for e, units in enumerate(g.entity_units) for u in units}
    assert unit_entity == entity_unit
    assert len(unit_entity) == sum(map(len, g.unit_entities)) == sum(map(len, g.entity_units))
    assert g.sizes["chunk_unit_edges"] == len(chunk_unit)
    assert g.sizes["unit_entity_edges"] == len(unit_entity)


def test_shared_entity_links_units_of_different_documents(sample_engine_any: CueRag) -> None:
    g = sample_engine_any.graph(SAMPLE)
    forest = g.entity_pos[entity_point_id("Nottingham Forest")]
    docs = {g.chunk_docs[c] for u in g.entity_units[forest] for c in g.unit_chunks[u]}
    assert {"european-cup-1980", "nottingham-forest-fa-cup"} <= docs


def test_graph_rebuilt_from_store_equals_engine_graph(sample_engine_any: CueRag) -> None:
    engine = sample_engine_any
    rebuilt = load_graph(engine.store, SAMPLE, dim=engine.models.embedder.dim)
    assert_graphs_equal(rebuilt, engine.graph(SAMPLE))


# ---- identity of units and entities --------------------------------------------------------------

SHARED = "Lotharingia was ruled by Lothair II from 855 until 869."


def test_identical_sentence_in_two_documents_is_one_unit(engine: CueRag) -> None:
    docs = [
        Document(id="doc-a", title="Alpha", text=f"Alpha is a Greek letter. {SHARED}"),
        Document(id="doc-b", title="Beta", text=f"Beta is the second letter. {SHARED}"),
    ]
    report = engine.index_documents("shared", docs)
    assert (report.documents_added, report.chunks_added, report.units_added) == (2, 2, 3)
    g = engine.graph("shared")
    assert g.unit_texts.count(SHARED) == 1
    u = g.unit_texts.index(SHARED)
    assert g.unit_ids[u] == unit_point_id(SHARED)
    assert sorted(g.chunk_docs[c] for c in g.unit_chunks[u]) == ["doc-a", "doc-b"]
    for c in range(len(g.chunk_ids)):
        assert u in g.chunk_units[c]
    assert engine.store.count(collection_name("shared", UNITS)) == 3


def test_possessive_and_plain_mentions_are_one_entity(engine: CueRag) -> None:
    plain = "The court of Lothair II met in Metz in 863."
    possessive = "The synod of Lothair II's bishops met at Metz in 863."
    # Precondition on the NER model: it sees the name in both; the possessive's "'s" is not part
    # of the name, and the span loses it at its edge (cuerag.text.entities.name_span).
    surfaces = [{s for s, _ in found} for found in engine.models.ner.extract([plain, possessive])]
    assert "Lothair II" in surfaces[0]
    assert "Lothair II" in surfaces[1]

    engine.index_documents(
        "lothair",
        [Document(id="court", title="", text=plain), Document(id="synod", title="", text=possessive)],
    )
    g = engine.graph("lothair")
    matching = [e for e, name in enumerate(g.entity_names) if normalize_entity(name) == "lothair ii"]
    assert len(matching) == 1
    (e,) = matching
    assert g.entity_ids[e] == entity_point_id("Lothair II") == entity_point_id("Lothair II's")
    assert sorted(g.unit_texts[u] for u in g.entity_units[e]) == sorted([plain, possessive])
    # The unit written second found the entity already planned and linked to it, not a copy.
    stored = engine.store.count(collection_name("lothair", ENTITIES))
    assert stored == len(g.entity_ids)


# ---- re-indexing ---------------------------------------------------------------------------------


def test_reindexing_the_same_corpus_is_idempotent(engine: CueRag) -> None:
    first = engine.index_paths(SAMPLE, [SAMPLE_CORPUS])
    assert first.documents_added == len(SAMPLE_RECORDS)
    counts = point_counts(engine, SAMPLE)
    graph_before = engine.graph(SAMPLE)
    assert counts == {
        "chunks": len(graph_before.chunk_ids),
        "units": len(graph_before.unit_ids),
        "entities": len(graph_before.entity_ids),
    }

    again = engine.index_paths(SAMPLE, [SAMPLE_CORPUS])
    assert again.documents_added == 0
    assert again.documents_replaced == 0
    assert again.documents_unchanged == len(SAMPLE_RECORDS)
    assert (again.chunks_added, again.chunks_removed, again.chunks_kept) == (0, 0, len(graph_before.chunk_ids))
    assert (again.units_added, again.entities_added) == (0, 0)
    assert again.totals == first.totals == graph_before.sizes
    assert point_counts(engine, SAMPLE) == counts
    assert_graphs_equal(engine.graph(SAMPLE), graph_before)
    # And a fresh engine on the same store sees the same graph.
    assert_graphs_equal(load_graph(engine.store, SAMPLE, dim=engine.models.embedder.dim), graph_before)


OLD_MOZART = "Mozart was born in Salzburg in 1756."
NEW_MOZART = "Wolfgang Amadeus Mozart wrote the opera Don Giovanni, first performed in Prague in 1787."


def test_document_with_same_id_and_new_text_replaces_its_chunk(engine: CueRag) -> None:
    engine.index_documents(SAMPLE, SAMPLE_DOCS)
    before = engine.graph(SAMPLE)
    old_units = [t for t in before.unit_texts if t in next(d.text for d in SAMPLE_DOCS if d.id == "mozart")]
    assert OLD_MOZART in old_units and len(old_units) == 2
    assert entity_point_id("1756") in before.entity_pos

    report = engine.index_documents(SAMPLE, [Document(id="mozart", title="Wolfgang Amadeus Mozart", text=NEW_MOZART)])
    assert report.documents_replaced == 1
    assert (report.documents_added, report.documents_unchanged) == (0, 0)
    assert (report.chunks_added, report.chunks_removed, report.chunks_kept) == (1, 1, 0)
    assert report.units_added == 1

    g = engine.graph(SAMPLE)
    assert report.totals == g.sizes
    assert len(g.chunk_ids) == len(before.chunk_ids)
    assert g.sizes["documents"] == len(SAMPLE_RECORDS)
    assert [g.chunk_texts[c] for c in g.doc_chunks()["mozart"]] == [NEW_MOZART]
    assert not any("Salzburg in 1756" in t for t in g.chunk_texts)
    assert len(g.unit_ids) == len(before.unit_ids) - len(old_units) + 1
    assert NEW_MOZART in g.unit_texts
    assert not set(old_units) & set(g.unit_texts)
    assert entity_point_id("1756") not in g.entity_pos  # only the old text mentioned it
    assert entity_point_id("Salzburg") in g.entity_pos  # still mentioned by the Salzburg document
    assert engine.store.count(collection_name(SAMPLE, "chunks")) == len(before.chunk_ids)

    # The old text is not retrievable by any path.
    question = "Where was Mozart born?"
    dense = engine.query(SAMPLE, question, params=make_params(top_n=len(g.chunk_ids)), method="dense")
    assert len(dense.chunks) == len(g.chunk_ids)
    assert not any("Salzburg in 1756" in h.text for h in dense.chunks)
    assert [h.text for h in dense.chunks if h.doc_id == "mozart"] == [NEW_MOZART]
    qiter = engine.query(SAMPLE, question)
    assert not any("Salzburg in 1756" in h.text for h in qiter.chunks)
    assert qiter.trace is not None
    assert not any(OLD_MOZART in p.unit_texts for d in qiter.trace.depths for p in d.paths)
    retriever = engine.retriever(SAMPLE)
    near = retriever.nearest_units(retriever.embed_query(OLD_MOZART), 5)
    assert len(near) == 5
    assert OLD_MOZART not in [g.unit_texts[u] for u, _ in near]


# ---- crash leftovers ------------------------------------------------------------------------------

CRASHED = "Marie Curie was born in Warsaw in 1867."


def test_points_of_a_crashed_run_are_not_in_the_graph(engine: CueRag) -> None:
    corpus = "crash"
    engine.index_documents(
        corpus,
        [
            Document(id="vienna", title="Vienna", text="Vienna is the capital of Austria."),
            Document(id="salzburg", title="Salzburg", text="Salzburg is a city on the Salzach river in Austria."),
        ],
    )
    before = engine.graph(corpus)
    counts_before = point_counts(engine, corpus)

    # A run killed after writing the entities and units of a document, before its chunk: what the
    # indexer writes, in its order, minus the last step.
    models = engine.models
    found = [(s, label) for s, label in models.ner.extract([CRASHED])[0] if normalize_entity(s)]
    assert found, "precondition: the NER model finds entities in the crashed sentence"
    entity_ids = _dedupe([entity_point_id(s) for s, _ in found])
    names = {entity_point_id(s): (s, label) for s, label in reversed(found)}
    vectors = models.embedder.encode([names[e][0] for e in entity_ids] + [CRASHED])
    engine.store.upsert(
        collection_name(corpus, ENTITIES),
        [
            StoredPoint(
                id=e,
                payload={"name": names[e][0], "norm": normalize_entity(names[e][0]), "label": names[e][1]},
                vector=v,
            )
            for e, v in zip(entity_ids, vectors[:-1], strict=True)
        ],
    )
    engine.store.upsert(
        collection_name(corpus, UNITS),
        [
            StoredPoint(
                id=unit_point_id(CRASHED), payload={"text": CRASHED, "entity_ids": entity_ids}, vector=vectors[-1]
            )
        ],
    )
    crashed_counts = point_counts(engine, corpus)
    assert crashed_counts["units"] == counts_before["units"] + 1
    assert crashed_counts["entities"] > counts_before["entities"]
    assert crashed_counts["chunks"] == counts_before["chunks"]

    rebuilt = load_graph(engine.store, corpus, dim=models.embedder.dim)
    assert_graphs_equal(rebuilt, before)
    assert unit_point_id(CRASHED) not in rebuilt.unit_pos
    assert not set(entity_ids) & set(rebuilt.entity_pos)

    # Retrieval skips the orphans even when they are the store's nearest points.
    retriever = engine.retriever(corpus)
    near = retriever.nearest_units(retriever.embed_query(CRASHED), 5)
    assert sorted(u for u, _ in near) == list(range(len(before.unit_ids)))  # every live unit, no orphan
    anchors = retriever.link_mention(found[0][0], 3)
    assert all(a.entity_id in before.entity_pos for a in anchors)
    assert found[0][0] not in [a.name for a in anchors]
    result = engine.query(corpus, "Where was Marie Curie born?")
    assert result.trace is not None
    assert all(a.entity_id in before.entity_pos for a in result.trace.anchors)
    assert {h.doc_id for h in result.chunks} <= {"vienna", "salzburg"}

    # A rerun finishes the job with the same ids: nothing is duplicated.
    report = engine.index_documents(corpus, [Document(id="curie", title="Marie Curie", text=CRASHED)])
    assert report.documents_added == 1
    after = engine.graph(corpus)
    assert unit_point_id(CRASHED) in after.unit_pos
    u = after.unit_pos[unit_point_id(CRASHED)]
    assert [after.entity_ids[e] for e in after.unit_entities[u]] == entity_ids
    assert point_counts(engine, corpus) == {**crashed_counts, "chunks": counts_before["chunks"] + 1}


def test_chunk_whose_unit_write_is_missing_keeps_its_other_units(engine: CueRag) -> None:
    corpus = "partial"
    engine.index_documents(corpus, [Document(id="a", title="", text="Vienna is the capital of Austria.")])
    g = engine.graph(corpus)
    (chunk,) = engine.store.retrieve(collection_name(corpus, "chunks"), g.chunk_ids, with_vectors=True)
    missing = unit_point_id("A sentence whose unit was never written.")
    payload = {**chunk.payload, "unit_ids": [missing, *chunk.payload["unit_ids"]]}
    engine.store.upsert(
        collection_name(corpus, "chunks"), [StoredPoint(id=chunk.id, payload=payload, vector=chunk.vector)]
    )
    rebuilt = load_graph(engine.store, corpus, dim=engine.models.embedder.dim)
    assert rebuilt.unit_ids == g.unit_ids
    assert rebuilt.chunk_units == g.chunk_units
    assert missing not in rebuilt.unit_pos


@pytest.mark.parametrize("store", ["edge", "local"])
def test_graph_survives_reopening_the_store(make_engine, store: str, tmp_path) -> None:
    data = tmp_path / f"reopen-{store}"
    first = make_engine(store=store, data_dir=data)
    first.index_documents("c", SAMPLE_DOCS[:4])
    graph = first.graph("c")
    first.close()
    second = make_engine(store=store, data_dir=data)
    assert second.corpora() == ["c"]
    assert_graphs_equal(second.graph("c"), graph)


def test_replaced_versions_do_not_crowd_out_live_units(engine: CueRag) -> None:
    corpus = "versions"
    engine.index_documents(
        corpus,
        [
            Document(
                id="vienna",
                title="",
                text="Vienna is the capital of Austria. Vienna lies on the Danube. Many composers worked in Vienna.",
            )
        ],
    )
    for year in range(1700, 1712):  # twelve edits of one document
        engine.index_documents(
            corpus, [Document(id="mozart", title="", text=f"Mozart was born in Salzburg in {year}.")]
        )
    g = engine.graph(corpus)
    assert len(g.unit_ids) == 4  # three Vienna sentences and the latest Mozart sentence
    retriever = engine.retriever(corpus)
    near = retriever.nearest_units(retriever.embed_query("Where was Mozart born?"), 3)
    assert len(near) == 3
