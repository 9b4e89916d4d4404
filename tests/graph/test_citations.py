"""Structure through the whole engine: chunks follow sections and carry their heading path, PDF
pages and character span; headings are not units; hyperlinks are edges rebuilt from the store;
every hit (library, CLI, MCP tools) carries its citation, and a document can be read back whole or
around a chunk. One folder of real and realistic files, indexed once with small chunks."""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from typer.testing import CliRunner

import cuerag.cli.app
import cuerag.cli.context
from cuerag import CueRag, Settings
from cuerag.graph.citations import citation_of
from cuerag.graph.document_text import WORD_BACKUP
from cuerag.index.sync import load_paths
from cuerag.models.loading import Models
from server.app import build_server
from server.config import ServerSettings
from tests.ingest.test_formats import DATA, NOTE, SQLITE, make_docx

pytestmark = pytest.mark.anyio
CORPUS = "docs"


def settings(data: Path) -> Settings:
    # Small chunks: each document spans several, so spans, pages and sections are tested across chunks.
    return Settings(data_dir=data, chunk_tokens=96, chunk_overlap=8)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("folder")
    shutil.copytree(SQLITE, root / "sqlite")
    (root / "manuals").mkdir()
    shutil.copy(DATA / "caption-light.pdf", root / "manuals" / "caption-light.pdf")
    (root / "notes" / "guides").mkdir(parents=True)
    (root / "notes" / "camera.md").write_text(NOTE)
    (root / "notes" / "battery.md").write_text("# Battery Notes\n\nThe Lumen X3 battery lasts 420 shots.\n")
    (root / "notes" / "guides" / "lenses.md").write_text("# Lenses\n\nThe 35 mm prime suits the Lumen X3.\n")
    make_docx(root / "policy.docx")
    return root


@pytest.fixture(scope="module")
def data_dir(models: Models, folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("data")
    engine = CueRag(settings(data), models=models)
    try:
        report = engine.index_paths(CORPUS, [folder])
        assert report.documents_added == 10
    finally:
        engine.close()
    # The CLI and the MCP server below each open their own copy: one process holds an index at a time.
    for copy in ("cli", "mcp"):
        shutil.copytree(data, data.parent / f"{data.name}-{copy}")
    return data


@pytest.fixture(scope="module")
def engine(models: Models, data_dir: Path) -> Iterator[CueRag]:
    """A fresh engine on the stored index: everything below is rebuilt from the store."""
    engine = CueRag(settings(data_dir), models=models)
    yield engine
    engine.close()


def test_spans_slice_the_extracted_text_and_documents_read_back_whole(engine: CueRag, folder: Path) -> None:
    graph = engine.graph(CORPUS)
    extracted = {d.id: d for d in load_paths([folder])}
    assert set(graph.chunk_docs) == set(extracted)
    for doc_id, positions in graph.doc_chunks().items():
        whole = engine.read_document(CORPUS, doc_id, max_chars=100_000)
        assert whole.text == extracted[doc_id].text.rstrip(), doc_id
        assert whole.total_chars == len(whole.text) and whole.has_spans
        for c in positions:
            hit_citation = graph.chunk_payload(c)
            start, end = hit_citation["start"], hit_citation["end"]
            assert whole.text[start:end] == graph.chunk_texts[c], (doc_id, c)
    assert len(graph.doc_chunks()["sqlite/expridx.html"]) > 3  # small chunks: several per page


def test_chunks_follow_sections_and_carry_heading_paths(engine: CueRag) -> None:
    graph = engine.graph(CORPUS)
    headings = {graph.chunk_sections[c] for c in graph.doc_chunks()["sqlite/expridx.html"]}
    assert {"1. How To Use Indexes On Expressions", "2. Restrictions", "3. Compatibility"} <= headings
    (sensor,) = [c for c in graph.doc_chunks()["notes/camera.md"] if "45 megapixels" in graph.chunk_texts[c]]
    assert graph.chunk_sections[sensor] == "Lumen X3 › Sensor"
    assert graph.chunk_full_text(sensor).startswith("Lumen X3 camera\nLumen X3 › Sensor\n")  # what is embedded


def test_headings_are_not_units(engine: CueRag) -> None:
    units = set(engine.graph(CORPUS).unit_texts)
    for heading in ("Lumen X3", "Sensor", "2. Restrictions", "3. Compatibility", "Billing", "Refunds", "Lenses"):
        assert heading not in units
    assert any("45 megapixels" in u for u in units)


def test_pdf_hits_know_their_pages(engine: CueRag, folder: Path) -> None:
    result = engine.query(CORPUS, "Why should I use the caption-light package?", method="dense")
    pdf_hits = [h for h in result.chunks if h.doc_id == "manuals/caption-light.pdf"]
    assert pdf_hits
    (extracted,) = load_paths([folder / "manuals" / "caption-light.pdf"])
    assert extracted.structure is not None
    pages = extracted.structure.pages
    for hit in pdf_hits:
        cite = hit.citation
        assert cite is not None and cite.source == "manuals/caption-light.pdf" and cite.pages
        assert cite.start is not None and cite.end is not None
        # Checked against the page text itself: every page the hit names holds part of its text.
        assert cite.pages == [p.number for p in pages if p.start < cite.end and p.end > cite.start]
        for number in cite.pages:
            page = pages[number - 1]
            lo, hi = max(page.start, cite.start), min(page.end, cite.end)
            assert extracted.text[lo:hi].strip() and extracted.text[lo:hi] in hit.text
    two_page = [c for c in engine.graph(CORPUS).doc_chunks()["manuals/caption-light.pdf"]]
    assert {tuple(engine.graph(CORPUS).chunk_payload(c)["pages"]) for c in two_page} >= {(1,), (2,)}


def test_links_are_edges_rebuilt_from_the_store(engine: CueRag, folder: Path) -> None:
    # `engine` never indexed: its graph is built from the stored payloads alone.
    graph = engine.graph(CORPUS)
    edges = {(graph.chunk_docs[c], target) for c, links in enumerate(graph.chunk_links) for target in links.values()}
    assert ("sqlite/fullsql.html", "sqlite/expridx.html") in edges
    assert ("sqlite/expridx.html", "sqlite/deterministic.html") in edges
    assert ("sqlite/lang_reindex.html", "sqlite/expridx.html") in edges
    assert ("notes/camera.md", "notes/guides/lenses.md") in edges  # [text](guides/lenses.md#primes)
    assert ("notes/camera.md", "notes/battery.md") in edges  # [[Battery Notes|the battery]], by title
    assert all(source != target for source, target in edges)
    # Every link of the extracted pages whose target is in the corpus is an edge, and only those.
    extracted = load_paths([folder])
    ids = {d.id for d in extracted}
    expected = {
        (d.id, link.doc_id)
        for d in extracted
        if d.id.startswith("sqlite/") and d.structure is not None
        for link in d.structure.links
        if link.doc_id in ids and link.doc_id != d.id
    }
    assert {e for e in edges if e[0].startswith("sqlite/")} == expected
    assert graph.sizes["link_edges"] >= len(edges)
    # A link that leaves the corpus is kept on the chunk as metadata, not as an edge.
    outside = [
        link
        for c in graph.doc_chunks()["sqlite/fullsql.html"]
        for link in citation_of(graph, c).links
        if link.doc_id is None
    ]
    assert any(link.target.startswith("lang_createtable.html") for link in outside)


def test_library_hits_carry_citations(engine: CueRag) -> None:
    for method in ("qiter", "dense", "bm25"):
        result = engine.query(CORPUS, "How many megapixels does the Lumen X3 sensor have?", method=method)  # type: ignore[arg-type]
        top = result.chunks[0]
        assert top.doc_id == "notes/camera.md", method
        cite = top.citation
        assert cite is not None
        assert cite.source == "notes/camera.md" and cite.section == ["Lumen X3", "Sensor"]
        assert cite.heading == "Lumen X3 › Sensor" and cite.pages == []
        doc = engine.read_document(CORPUS, top.doc_id)
        assert doc.text[cite.start : cite.end] == top.text
        assert {link.doc_id for link in cite.links} >= {"notes/guides/lenses.md", "notes/battery.md", None}


def test_read_document_window_around_a_chunk(engine: CueRag) -> None:
    graph = engine.graph(CORPUS)
    c = graph.doc_chunks()["sqlite/expridx.html"][2]
    payload = graph.chunk_payload(c)
    window = engine.read_document(CORPUS, chunk_id=graph.chunk_ids[c], context=50)
    assert window.doc_id == "sqlite/expridx.html" and window.source == "sqlite/expridx.html"
    assert max(0, payload["start"] - 50 - WORD_BACKUP) <= window.start <= max(0, payload["start"] - 50)
    assert window.end <= payload["end"] + 50
    assert graph.chunk_texts[c] in window.text
    assert any(s.heading == "2. Restrictions" for s in window.sections)


def test_a_window_around_a_chunk_starts_at_a_word(engine: CueRag) -> None:
    """A window `context` characters before its chunk started mid-word ("ression is..."): it backs
    up to the word's start, and its offsets still slice the document."""
    graph = engine.graph(CORPUS)
    doc_id = "sqlite/expridx.html"
    whole = engine.read_document(CORPUS, doc_id, max_chars=100_000).text
    for c in graph.doc_chunks()[doc_id]:
        for context in (7, 50, 333):
            window = engine.read_document(CORPUS, chunk_id=graph.chunk_ids[c], context=context, max_chars=2_000)
            at = window.start
            assert at == 0 or whole[at - 1].isspace(), (context, whole[max(0, at - 20) : at + 20])
            assert window.text == whole[window.start : window.end] and graph.chunk_texts[c] in window.text
            assert window.next_start == (window.end if window.end < len(whole) else None)


def test_inline_documents_cite_their_id(engine: CueRag) -> None:
    from cuerag import make_document

    engine.index_documents("inline", [make_document("Oslo", "Oslo is the capital of Norway.", "oslo-1")])
    hit = engine.query("inline", "capital of Norway", method="dense").chunks[0]
    assert hit.citation is not None and hit.citation.source == "oslo-1"
    assert (hit.citation.start, hit.citation.end) == (0, len(hit.text))


# ---- the CLI and the MCP tools -------------------------------------------------------------------


def test_cli_query_json_human_view_and_read(models: Models, data_dir: Path) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cuerag.cli.context, "make_own_engine", functools.partial(CueRag, models=models))
        runner = CliRunner()
        env = {"CUERAG_DATA_DIR": f"{data_dir}-cli", "CUERAG_CHUNK_TOKENS": "96", "CUERAG_CHUNK_OVERLAP": "8"}
        q = "How many megapixels does the Lumen X3 sensor have?"
        result = runner.invoke(cuerag.cli.app.app, ["query", q, "--corpus", CORPUS, "--json"], env=env)
        assert result.exit_code == 0, result.output
        top = json.loads(result.output)["chunks"][0]
        assert top["citation"]["source"] == "notes/camera.md"
        assert top["citation"]["heading"] == "Lumen X3 › Sensor"
        human = runner.invoke(cuerag.cli.app.app, ["query", q, "--corpus", CORPUS, "--no-trace"], env=env)
        assert human.exit_code == 0, human.output
        assert "notes/camera.md · § Lumen X3 › Sensor · chars" in " ".join(human.output.split())
        read = runner.invoke(cuerag.cli.app.app, ["read", "notes/camera.md", "--corpus", CORPUS], env=env)
        assert read.exit_code == 0, read.output
        assert "45 megapixels" in read.output and "Lumen X3 camera (notes/camera.md)" in read.output
        assert "more characters" not in read.output  # read whole
        part = runner.invoke(
            cuerag.cli.app.app, ["read", "notes/camera.md", "--corpus", CORPUS, "--max-chars", "20"], env=env
        )
        assert part.exit_code == 0, part.output
        assert part.output.rstrip().endswith("more characters; read on with --start 20")


@pytest.fixture(scope="module")
async def client(models: Models, data_dir: Path, folder: Path) -> AsyncIterator[Client]:
    server = build_server(
        settings(Path(f"{data_dir}-mcp")),
        ServerSettings(allowed_roots=[folder]),
        engine_factory=functools.partial(CueRag, models=models),
    )
    async with Client(server) as client:
        yield client


async def call(client: Client, name: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content is not None
    return result.structured_content


async def test_mcp_tools_return_citations(client: Client) -> None:
    q = "How many megapixels does the Lumen X3 sensor have?"
    for tool in ("q_iter", "dense_search"):
        top = (await call(client, tool, corpus=CORPUS, query=q))["chunks"][0]
        # Compact: what one cites (source, section; pages where there are any), nothing empty.
        assert top["citation"] == {"source": "notes/camera.md", "section": ["Lumen X3", "Sensor"]}, tool
    got = (await call(client, "get_chunks", corpus=CORPUS, ids=[top["chunk_id"]]))["chunks"][0]
    cite = got["citation"]  # whole: the document id, the heading, the span and the links too
    assert cite["doc_id"] == top["doc_id"] and cite["heading"] == "Lumen X3 › Sensor"
    assert isinstance(cite["start"], int) and isinstance(cite["end"], int)
    assert {"doc_id": "notes/battery.md", "target": "Battery Notes", "text": "the battery"} in got["citation"]["links"]
    window = await call(client, "read_document", corpus=CORPUS, chunk_id=top["chunk_id"], context=0)
    assert window["text"] == top["text"] and (window["start"], window["end"]) == (cite["start"], cite["end"])
    whole = await call(client, "read_document", corpus=CORPUS, doc_id="manuals/caption-light.pdf", max_chars=200)
    assert whole["end"] == 200 < whole["total_chars"] and whole["pages"] == [1]
    assert whole["next_start"] == 200  # where the next window starts (issue 31); none at the end
    rest = await call(client, "read_document", corpus=CORPUS, doc_id="manuals/caption-light.pdf", start=200)
    assert rest["end"] == rest["total_chars"] and rest.get("next_start") is None
    missing = await client.call_tool("read_document", {"corpus": CORPUS, "doc_id": "nope.md"})
    assert missing.is_error and "unknown document id 'nope.md'" in missing.content[0].text  # type: ignore[union-attr]
