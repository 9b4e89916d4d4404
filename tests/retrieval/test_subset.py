"""Documents an agent can list, and retrieval limited to part of a corpus: paging with a cursor
(and cursors that were tampered with), a listing read from the store without a graph or a model,
the ids an index run reports, and filters by document id, path prefix, glob and front-matter tags
that hold for every retrieval, the Q-Iter walk included, on both embedded backends."""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import BACKENDS
from typer.testing import CliRunner

import cuerag.cli.app
import cuerag.cli.context
from cuerag import CueRag, ParameterError, QIterParams, Settings
from cuerag.graph.schema import CHUNKS, UNITS, collection_name
from cuerag.models.loading import Models
from cuerag.retrieval.filters import NO_MATCH, DocFilter, make_filter
from cuerag.retrieval.qiter import q_iter
from cuerag.store import PointFilter

CORPUS = "notes"
QUESTION = "When did the club that won the 1979-80 European Cup win the FA Cup?"

# A small folder of Markdown notes with front matter: two football clubs, a cup, a city, a recipe.
# The clubs' note and the cup's share a sentence, so one unit belongs to documents on both sides of
# a filter by tag: the walk may take it, but only its chunk inside the filter.
SHARED = "Nottingham Forest is a football club from Nottingham in England."
NOTES = {
    "teams/forest.md": (
        "---\ntags: [football, clubs]\n---\n# Nottingham Forest\n\nNottingham Forest won the 1979-80 European Cup, "
        "beating Hamburger SV 1-0 in the final in Madrid. The club plays its home games at the City Ground. " + SHARED
    ),
    "teams/hamburg.md": (
        "---\ntags: football, germany\n---\n# Hamburger SV\n\nHamburger SV lost the 1980 European Cup final to "
        "Nottingham Forest. Hamburger SV won the Bundesliga in 1979."
    ),
    "cups/fa-cup.md": (
        "---\ntags: [cups]\ntitle: FA Cup\n---\n" + SHARED + " Nottingham Forest won the FA Cup in 1898 and 1959. "
        "The FA Cup is the oldest national football competition in the world."
    ),
    "cities/madrid.md": (
        "# Madrid\n\nMadrid hosted the 1980 European Cup final at the Santiago Bernabeu stadium. #travel #Spain"
    ),
    "kitchen/bread.txt": "Bread needs flour, water, salt and yeast. The dough rises for an hour before baking.",
}


def write_notes(root: Path, notes: dict[str, str] = NOTES) -> Path:
    for name, text in notes.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture(scope="module", params=BACKENDS)
def notes_engine(
    request: pytest.FixtureRequest, models: Models, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CueRag]:
    root = write_notes(tmp_path_factory.mktemp("notes"))
    settings = Settings(data_dir=tmp_path_factory.mktemp(f"data-{request.param}"), store=request.param)
    engine = CueRag(settings, models=models)
    engine.index_paths(CORPUS, [root])
    yield engine
    engine.close()


def inside(engine: CueRag, filter: DocFilter) -> set[str]:
    return {d.doc_id for d in engine.list_documents(CORPUS, filter=filter, limit=200).documents}


# ---- listing ------------------------------------------------------------------------------------


def test_list_documents_gives_each_document_with_its_tags(notes_engine: CueRag) -> None:
    listing = notes_engine.list_documents(CORPUS)
    docs = {d.doc_id: d for d in listing.documents}
    assert list(docs) == sorted(NOTES) and listing.total == len(NOTES) and listing.next_cursor is None
    assert docs["teams/forest.md"].title == "Nottingham Forest" and docs["teams/forest.md"].format == "md"
    assert docs["cups/fa-cup.md"].title == "FA Cup"  # the front matter's title
    assert docs["teams/forest.md"].tags == ["football", "clubs"]
    assert docs["teams/hamburg.md"].tags == ["football", "germany"]  # a comma-separated string
    assert docs["cities/madrid.md"].tags == ["travel", "Spain"]  # inline #tags
    assert docs["kitchen/bread.txt"].tags == [] and docs["kitchen/bread.txt"].format == "txt"
    assert all(d.chunks >= 1 and d.source == d.doc_id for d in docs.values())


def test_pages_follow_the_cursor_to_the_end_without_repeats(notes_engine: CueRag) -> None:
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        page = notes_engine.list_documents(CORPUS, cursor=cursor, limit=2)
        assert page.total == len(NOTES) and len(page.documents) <= 2
        seen += [d.doc_id for d in page.documents]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == sorted(NOTES)


def test_listing_filters_by_prefix_glob_and_tag(notes_engine: CueRag) -> None:
    assert inside(notes_engine, DocFilter(path_prefix="teams/")) == {"teams/forest.md", "teams/hamburg.md"}
    assert inside(notes_engine, DocFilter(path_glob="*.txt")) == {"kitchen/bread.txt"}
    assert inside(notes_engine, DocFilter(tags=["FOOTBALL"])) == {"teams/forest.md", "teams/hamburg.md"}
    assert inside(notes_engine, DocFilter(tags=["spain", "germany"])) == {"cities/madrid.md", "teams/hamburg.md"}
    assert inside(notes_engine, DocFilter(tags=["cups", "germany"])) == {"cups/fa-cup.md", "teams/hamburg.md"}
    both = DocFilter(path_prefix="teams/", tags=["germany"])  # every condition must hold
    assert inside(notes_engine, both) == {"teams/hamburg.md"}


@pytest.mark.parametrize(
    "cursor",
    [
        "not base64 at all!",
        base64.urlsafe_b64encode(b"[1, 2]").decode(),
        base64.urlsafe_b64encode(json.dumps(["teams/forest.md", "0" * 16]).encode()).decode(),
        "A" * 1000,
    ],
)
def test_a_tampered_cursor_is_refused(notes_engine: CueRag, cursor: str) -> None:
    with pytest.raises(ParameterError, match="invalid cursor"):
        notes_engine.list_documents(CORPUS, cursor=cursor)


def test_a_cursor_holds_only_for_its_own_filter(notes_engine: CueRag) -> None:
    cursor = notes_engine.list_documents(CORPUS, limit=1).next_cursor
    assert cursor is not None
    with pytest.raises(ParameterError, match="same corpus and filter"):
        notes_engine.list_documents(CORPUS, cursor=cursor, filter=DocFilter(path_prefix="teams/"))


@pytest.mark.parametrize("limit", [0, -1, 201, 10**9])
def test_page_sizes_out_of_range_are_refused(notes_engine: CueRag, limit: int) -> None:
    with pytest.raises(ParameterError, match="1 to 200"):
        notes_engine.list_documents(CORPUS, limit=limit)


def test_listing_reads_the_store_without_graph_or_models(models: Models, tmp_path: Path) -> None:
    root = write_notes(tmp_path / "notes")
    settings = Settings(data_dir=tmp_path / "data")
    with_graph = CueRag(settings, models=models)
    with_graph.index_paths(CORPUS, [root])
    expected = with_graph.list_documents(CORPUS)
    with_graph.close()
    cold = CueRag(settings)  # no models given: they would load on first use
    try:
        assert cold.list_documents(CORPUS) == expected
        assert not cold.models_loaded and cold.snapshots.loaded(CORPUS) is None
    finally:
        cold.close()


# ---- index reports --------------------------------------------------------------------------------


def test_index_reports_the_ids_it_added_changed_and_removed(engine: CueRag, tmp_path: Path) -> None:
    root = write_notes(tmp_path / "notes")
    first = engine.index_paths(CORPUS, [root])
    assert sorted(first.added_doc_ids) == sorted(NOTES) and first.documents_added == len(NOTES)
    (root / "cities/madrid.md").write_text("# Madrid\n\nMadrid is the capital of Spain.")
    (root / "kitchen/bread.txt").unlink()
    second = engine.index_paths(CORPUS, [root], sync=True)
    assert second.added_doc_ids == [] and second.changed_doc_ids == ["cities/madrid.md"]
    assert second.removed_doc_ids == ["kitchen/bread.txt"]


# ---- filters on retrieval -------------------------------------------------------------------------

FOOTBALL_CLUBS = DocFilter(tags=["football"])


def assert_walk_inside(engine: CueRag, filter: DocFilter, params: QIterParams) -> set[str]:
    """Q-Iter under the filter: every chunk returned, every unit on a kept path and every anchor
    lies inside the subset. Returns the documents of the hits."""
    retriever = engine.retriever(CORPUS, filter)
    subset = retriever.subset
    assert subset is not None
    graph = retriever.graph
    result = q_iter(retriever, QUESTION, params)
    assert result.chunks
    for hit in result.chunks:
        assert hit.doc_id in subset.doc_ids, hit.doc_id
        assert subset.has_chunk(graph.chunk_pos[hit.chunk_id])
        assert all(subset.has_unit(graph.unit_pos[u]) for u in hit.unit_ids)
    assert result.trace is not None
    for anchor in result.trace.anchors:
        assert subset.has_entity(graph.entity_pos[anchor.entity_id]), anchor.name
    for depth in result.trace.depths:
        for path in depth.paths:
            assert all(subset.has_unit(graph.unit_pos[u]) for u in path.unit_ids), path.unit_texts
    return {h.doc_id for h in result.chunks}


def test_unfiltered_q_iter_reaches_beyond_the_subset(notes_engine: CueRag) -> None:
    """The question's bridge is the FA Cup note: without a filter it comes back, so the filtered
    runs below have something to leave out; and the shared sentence is one unit of two documents."""
    docs = {h.doc_id for h in notes_engine.query(CORPUS, QUESTION, params=QIterParams(top_n=5)).chunks}
    assert "cups/fa-cup.md" in docs and not docs <= {"teams/forest.md", "teams/hamburg.md"}
    graph = notes_engine.graph(CORPUS)
    shared = graph.unit_texts.index(SHARED)
    assert {graph.chunk_docs[c] for c in graph.unit_chunks[shared]} == {"teams/forest.md", "cups/fa-cup.md"}


@pytest.mark.parametrize(
    "filter",
    [
        FOOTBALL_CLUBS,
        DocFilter(path_prefix="teams/"),
        DocFilter(path_glob="c*/*.md"),
        DocFilter(doc_ids=["teams/hamburg.md", "cities/madrid.md"]),
    ],
    ids=["tags", "prefix", "glob", "doc_ids"],
)
def test_q_iter_walks_only_inside_the_filter(notes_engine: CueRag, filter: DocFilter) -> None:
    allowed = inside(notes_engine, filter)
    for params in (
        QIterParams(top_n=5),  # with the dense fill: the subset is smaller than top_n
        QIterParams(top_n=5, lexical_weight=0.35, lexical_candidates=10, title_links=3),
    ):
        assert assert_walk_inside(notes_engine, filter, params) <= allowed


def test_every_method_keeps_to_the_filter(notes_engine: CueRag) -> None:
    allowed = inside(notes_engine, FOOTBALL_CLUBS)
    for method in ("qiter", "dense", "bm25", "hybrid", "ketrag"):
        result = notes_engine.query(CORPUS, QUESTION, method=method, filter=FOOTBALL_CLUBS)  # type: ignore[arg-type]
        assert {h.doc_id for h in result.chunks} <= allowed, method


def test_stepwise_tools_keep_to_the_filter(notes_engine: CueRag) -> None:
    retriever = notes_engine.retriever(CORPUS, FOOTBALL_CLUBS)
    graph = retriever.graph
    allowed = inside(notes_engine, FOOTBALL_CLUBS)
    units = retriever.search_units("FA Cup winners", 10)
    assert units
    for unit in units:
        assert unit.chunk_ids and {graph.chunk_docs[graph.chunk_pos[c]] for c in unit.chunk_ids} <= allowed
    _, anchors = retriever.link_entities(QUESTION, 5)
    assert anchors and retriever.subset is not None
    assert all(retriever.subset.has_entity(graph.entity_pos[a.entity_id]) for a in anchors)
    expansion = retriever.expand_entity("Nottingham Forest", QUESTION, 10)
    for unit in expansion.units:
        assert {graph.chunk_docs[graph.chunk_pos[c]] for c in unit.chunk_ids} <= allowed


def test_an_entity_outside_the_filter_says_so(notes_engine: CueRag) -> None:
    retriever = notes_engine.retriever(CORPUS, FOOTBALL_CLUBS)
    assert retriever.subset is not None
    outside = [retriever.graph.entity_ids[e] for e in np.flatnonzero(~retriever.subset.entities)]
    assert outside  # the recipe's entities, at least
    with pytest.raises(ParameterError, match="not mentioned in the documents the filter selects"):
        retriever.expand_entity(outside[0], QUESTION, 3)


@pytest.mark.parametrize("doc_id", ["no-such-note.md", "../../etc/passwd", "/etc/passwd"])
def test_unknown_doc_ids_are_named(notes_engine: CueRag, doc_id: str) -> None:
    with pytest.raises(ParameterError, match="unknown doc_ids in filter") as info:
        notes_engine.query(CORPUS, QUESTION, filter=DocFilter(doc_ids=["teams/forest.md", doc_id]))
    assert repr(doc_id) in str(info.value)


def test_a_filter_that_selects_nothing_gives_an_empty_result_that_says_why(notes_engine: CueRag) -> None:
    # As the listing of the same filter answers "0 documents", a search answers "no chunks", with a note.
    nothing = DocFilter(tags=["no-such-tag"])
    assert notes_engine.list_documents(CORPUS, filter=nothing).total == 0
    for method in ("qiter", "dense", "bm25", "hybrid"):
        result = notes_engine.query(CORPUS, QUESTION, method=method, filter=nothing)  # type: ignore[arg-type]
        assert (result.chunks, result.note) == ([], NO_MATCH), method
    assert notes_engine.query(CORPUS, QUESTION, filter=DocFilter(path_prefix="../")).note == NO_MATCH
    retriever = notes_engine.retriever(CORPUS, nothing)
    assert retriever.search_units(QUESTION, 5) == [] and retriever.link_entities(QUESTION, 3)[1] == []
    with pytest.raises(ParameterError, match="no document of this corpus matches the filter"):
        retriever.expand_entity("Nottingham Forest", QUESTION, 3)  # an entity the filter cannot hold


def test_loose_filter_values_are_checked() -> None:
    assert make_filter() is None and make_filter(tags=[]) is None
    with pytest.raises(ParameterError, match="invalid filter: path_prefix"):
        make_filter(path_prefix="x" * 300)
    with pytest.raises(ParameterError, match="invalid filter: doc_ids"):
        make_filter(doc_ids=[str(i) for i in range(1001)])


def test_the_store_filters_chunks_by_payload_and_units_by_id(notes_engine: CueRag) -> None:
    """The Qdrant filter itself, on each backend: searches return only what it selects."""
    store = notes_engine.store
    vector = np.ones(notes_engine.models.embedder.dim, dtype=np.float32)
    hits = store.search(collection_name(CORPUS, CHUNKS), vector, 50, where=PointFilter(doc_ids=("teams/forest.md",)))
    assert hits and {h.payload["doc_id"] for h in hits} == {"teams/forest.md"}
    graph = notes_engine.graph(CORPUS)
    some = tuple(graph.unit_ids[:2])
    units = store.search(collection_name(CORPUS, UNITS), vector, 50, where=PointFilter(ids=some))
    assert {h.id for h in units} == set(some)
    rest = store.search(collection_name(CORPUS, UNITS), vector, 500, where=PointFilter(exclude_ids=some))
    assert rest and not {h.id for h in rest} & set(some)


# ---- the command line ---------------------------------------------------------------------------


def test_cli_lists_documents_and_filters_a_query(models: Models, tmp_path: Path) -> None:
    data = tmp_path / "data"
    indexer = CueRag(Settings(data_dir=data), models=models)
    indexer.index_paths(CORPUS, [write_notes(tmp_path / "notes")])
    indexer.close()
    runner = CliRunner()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cuerag.cli.context, "make_own_engine", functools.partial(CueRag, models=models))
        listed = runner.invoke(
            cuerag.cli.app.app, ["documents", "-c", CORPUS, "--tag", "football", "--json", "--data-dir", str(data)]
        )
        paged = runner.invoke(cuerag.cli.app.app, ["documents", "-c", CORPUS, "--limit", "2", "--data-dir", str(data)])
        tampered = runner.invoke(
            cuerag.cli.app.app, ["documents", "-c", CORPUS, "--cursor", "abc", "--data-dir", str(data)]
        )
        query = ["query", QUESTION, "-c", CORPUS, "--prefix", "teams/", "--json", "--data-dir", str(data)]
        answered = runner.invoke(cuerag.cli.app.app, query)
    assert listed.exit_code == 0, listed.output
    assert {d["doc_id"] for d in json.loads(listed.stdout)["documents"]} == {"teams/forest.md", "teams/hamburg.md"}
    assert paged.exit_code == 0 and "2 of 5 documents; next page: --cursor " in paged.stdout, paged.output
    assert tampered.exit_code == 1 and "invalid --cursor" in tampered.output
    assert answered.exit_code == 0, answered.output
    hits = json.loads(answered.stdout)["chunks"]
    assert hits and {h["doc_id"] for h in hits} <= {"teams/forest.md", "teams/hamburg.md"}


def test_edited_tags_are_what_the_filter_sees(engine: CueRag, tmp_path: Path) -> None:
    """A front-matter edit leaves the text, and so every chunk, as it was; the tags must follow
    all the same, or a filter by tag would select by the old ones."""
    root = write_notes(tmp_path / "notes")
    engine.index_paths(CORPUS, [root])
    forest = root / "teams/forest.md"
    forest.write_text(forest.read_text().replace("tags: [football, clubs]", "tags: [archive]"))
    report = engine.index_paths(CORPUS, [root])
    assert report.chunks_added == 0  # nothing re-embedded
    assert inside(engine, DocFilter(tags=["archive"])) == {"teams/forest.md"}
    assert engine.query(CORPUS, QUESTION, filter=DocFilter(tags=["clubs"])).note == NO_MATCH
    forest.write_text(forest.read_text().replace("---\ntags: [archive]\n---\n", ""))
    engine.index_paths(CORPUS, [root])
    assert next(d for d in engine.list_documents(CORPUS).documents if d.doc_id == "teams/forest.md").tags == []
