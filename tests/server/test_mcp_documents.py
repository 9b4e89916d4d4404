"""Documents and filters through a real MCP client: index_corpus reports the ids it added,
list_documents pages with a cursor, documents read as resources from the template (and hostile URIs
refused), retrieval results link each hit's document, and the `filter` argument keeps every
retrieval tool to the documents it selects."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, PromptReference, ResourceTemplateReference

from cuerag import CueRag
from cuerag.models.loading import Models
from cuerag.retrieval.filters import NO_MATCH
from tests.retrieval.test_subset import NOTES, QUESTION, write_notes
from tests.tools.test_mcp_tools import call, call_error, make_server
from tools.resources import DOCUMENT_TEMPLATE, document_uri

pytestmark = pytest.mark.anyio
CORPUS = "notes"
CLUBS = {"teams/forest.md", "teams/hamburg.md"}


@dataclass
class Notes:
    client: Client
    engine: CueRag
    indexed: dict[str, Any]


@pytest.fixture(scope="module")
async def notes(models: Models, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Notes]:
    root = write_notes(tmp_path_factory.mktemp("notes"))
    engines: list[CueRag] = []
    server = make_server(models, tmp_path_factory.mktemp("data"), roots=[root], engines=engines)
    async with Client(server) as client:
        indexed = await call(client, "index_corpus", corpus=CORPUS, paths=[str(root)])
        yield Notes(client=client, engine=engines[0], indexed=indexed)


def links(result: Any) -> list[str]:
    return [c.uri for c in result.content if c.type == "resource_link"]


async def test_index_corpus_returns_the_ids_it_added(notes: Notes) -> None:
    assert sorted(notes.indexed["added_doc_ids"]) == sorted(NOTES)
    assert notes.indexed["documents_added"] == len(NOTES)


async def test_index_corpus_says_what_it_did_in_text_for_a_model_that_sees_only_text(
    models: Models, tmp_path: Path
) -> None:
    async with Client(make_server(models, tmp_path, roots=[])) as client:  # not the shared corpus
        tea = {"corpus": "tea", "documents": [{"title": "T", "text": "Tea."}]}
        result = await client.call_tool("index_corpus", tea)
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith("indexed corpus tea in ") and "1 document added" in text, text
    assert not text.lstrip().startswith("{")  # not the JSON again: the structured content has it
    assert result.structured_content is not None and result.structured_content["documents_added"] == 1


async def test_list_documents_pages_with_a_cursor(notes: Notes) -> None:
    seen: list[str] = []
    args: dict[str, Any] = {"corpus": CORPUS, "limit": 2}
    while True:
        page = await call(notes.client, "list_documents", **args)
        assert page["total"] == len(NOTES)
        seen += [d["doc_id"] for d in page["documents"]]
        if page["next_cursor"] is None:
            break
        args["cursor"] = page["next_cursor"]
    assert seen == sorted(NOTES)
    teams = await call(notes.client, "list_documents", corpus=CORPUS, filter={"path_prefix": "teams/"})
    assert {d["doc_id"] for d in teams["documents"]} == CLUBS
    # The text channel lists them one a line, not as the JSON again (a model that sees only it).
    first = await notes.client.call_tool("list_documents", {"corpus": CORPUS, "limit": 2})
    text = first.content[0].text  # type: ignore[union-attr]
    assert text.startswith(f"2 of {len(NOTES)} documents of {CORPUS}; next page: cursor=")
    assert [line.split('"')[1] for line in text.splitlines()[1:]] == sorted(NOTES)[:2]
    assert '"documents"' not in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"limit": 10**9}, "`limit`=1000000000"),
        ({"limit": 0}, "`limit`=0"),
        ({"cursor": "eyJhIjogMX0"}, "invalid cursor"),
        ({"cursor": "x" * 5000}, "`cursor`="),
        ({"filter": {"tags": "football"}}, "`filter.tags`"),
        ({"filter": {"path": "teams/"}}, "unknown argument `filter.path`"),
    ],
)
async def test_list_documents_refuses_hostile_arguments(notes: Notes, args: dict[str, Any], message: str) -> None:
    assert message in await call_error(notes.client, "list_documents", corpus=CORPUS, **args)


async def test_a_document_reads_as_a_resource(notes: Notes) -> None:
    templates = (await notes.client.list_resource_templates()).resource_templates
    assert DOCUMENT_TEMPLATE in [t.uri_template for t in templates]
    read = await notes.client.read_resource(document_uri(CORPUS, "teams/forest.md"))
    text = read.contents[0].text  # type: ignore[union-attr]
    assert text == notes.engine.read_document(CORPUS, "teams/forest.md").text
    assert "Nottingham Forest won the 1979-80 European Cup" in text


@pytest.mark.parametrize(
    "uri",
    [
        f"cuerag://{CORPUS}/documents/../../../etc/passwd",
        f"cuerag://{CORPUS}/documents/%2E%2E/%2E%2E/etc/passwd",
        f"cuerag://{CORPUS}/documents//etc/passwd",
        f"cuerag://{CORPUS}/documents/teams/forest.md%00",
        f"cuerag://{CORPUS}/documents/no-such-note.md",
        "cuerag://no-such-corpus/documents/teams/forest.md",
        "cuerag://bad name!/documents/teams/forest.md",
    ],
)
async def test_hostile_or_unknown_resource_uris_are_refused(notes: Notes, uri: str) -> None:
    # A resource that is not there is invalid params (-32602), as the 2026-07-28 specification
    # says it must be; an internal error (-32603) is left to the store failing.
    with pytest.raises(MCPError) as refused:
        await notes.client.read_resource(uri)
    assert refused.value.error.code == INVALID_PARAMS, refused.value.error


async def test_an_unknown_document_says_what_is_not_there(notes: Notes) -> None:
    with pytest.raises(MCPError) as refused:
        await notes.client.read_resource(document_uri(CORPUS, "no-such-note.md"))
    assert refused.value.error.code == INVALID_PARAMS
    assert "unknown document id 'no-such-note.md'" in refused.value.error.message


async def test_the_document_template_completes_corpus_and_doc_id(notes: Notes) -> None:
    template = ResourceTemplateReference(uri=DOCUMENT_TEMPLATE)
    corpus = await notes.client.complete(template, {"name": "corpus", "value": "no"})
    assert corpus.completion.values == [CORPUS] and corpus.completion.has_more is False
    assert (await notes.client.complete(template, {"name": "corpus", "value": "zz"})).completion.values == []
    teams = await notes.client.complete(template, {"name": "doc_id", "value": "teams/"}, {"corpus": CORPUS})
    assert teams.completion.values == sorted(CLUBS) and teams.completion.total == len(CLUBS)
    every = await notes.client.complete(template, {"name": "doc_id", "value": ""}, {"corpus": CORPUS})
    assert every.completion.values == sorted(NOTES)
    # No corpus chosen yet, or one that is not there: nothing to offer, and no error.
    assert (await notes.client.complete(template, {"name": "doc_id", "value": "t"})).completion.values == []
    unknown = await notes.client.complete(template, {"name": "doc_id", "value": ""}, {"corpus": "nope"})
    assert unknown.completion.values == []
    # The research prompt's corpus completes too.
    prompt = await notes.client.complete(PromptReference(name="research"), {"name": "corpus", "value": ""})
    assert prompt.completion.values == [CORPUS]


async def test_the_research_prompt_drives_q_iter_then_read_document(notes: Notes) -> None:
    listed = next(p for p in (await notes.client.list_prompts()).prompts if p.name == "research")
    assert listed.title and listed.description
    assert {(a.name, a.required) for a in listed.arguments or []} == {("corpus", True), ("question", True)}
    assert all(a.description for a in listed.arguments or [])
    got = await notes.client.get_prompt("research", {"corpus": CORPUS, "question": QUESTION})
    (message,) = got.messages
    text = message.content.text  # type: ignore[union-attr]
    assert message.role == "user" and QUESTION in text and f'corpus="{CORPUS}"' in text
    assert text.index("q_iter") < text.index("read_document")
    # Every tool the prompt names is one this server lists.
    tools = {t.name for t in (await notes.client.list_tools()).tools}
    assert {"q_iter", "expand_entity", "read_document"} <= tools


async def test_retrieval_results_link_each_hit_to_its_document(notes: Notes) -> None:
    result = await notes.client.call_tool("q_iter", {"corpus": CORPUS, "query": QUESTION})
    assert not result.is_error and result.structured_content is not None
    hits = list(dict.fromkeys(h["doc_id"] for h in result.structured_content["chunks"]))
    assert links(result) == [document_uri(CORPUS, d) for d in hits]
    for link in (c for c in result.content if c.type == "resource_link"):
        assert link.mime_type == "text/plain" and link.description, link  # what a client opens
    opened = await notes.client.read_resource(links(result)[0])
    assert opened.contents[0].text == notes.engine.read_document(CORPUS, hits[0]).text  # type: ignore[union-attr]
    listed = await notes.client.call_tool("list_documents", {"corpus": CORPUS})
    assert links(listed) == [document_uri(CORPUS, d) for d in sorted(NOTES)]


@pytest.mark.parametrize("detail", ["compact", "full"])
async def test_each_hit_cites_and_links_the_same_in_text_and_structured_content(notes: Notes, detail: str) -> None:
    """Claude Code gives the model only the structured content, claude.ai only the text: each
    hit's source, section and document URI must be in both (issue 31)."""
    result = await notes.client.call_tool("q_iter", {"corpus": CORPUS, "query": QUESTION, "detail": detail})
    assert not result.is_error and result.structured_content is not None
    text = result.content[0].text  # type: ignore[union-attr]
    hits = result.structured_content["chunks"]
    assert hits
    for hit in hits:
        uri = document_uri(CORPUS, hit["doc_id"])
        assert hit["uri"] == uri and uri in links(result)
        source, section = hit["citation"]["source"], hit["citation"].get("section", [])
        assert source == hit["doc_id"], hit
        cite = " › ".join([source, *section])
        assert f"cite: {cite} · {uri}" in text, (cite, text)


async def test_every_retrieval_tool_keeps_to_the_filter(notes: Notes) -> None:
    clubs = {"tags": ["football"]}
    for tool in ("q_iter", "dense_search"):
        result = await call(notes.client, tool, corpus=CORPUS, query=QUESTION, filter=clubs)
        assert {h["doc_id"] for h in result["chunks"]} <= CLUBS, tool
    graph = notes.engine.graph(CORPUS)

    def docs_of(chunk_ids: list[str]) -> set[str]:
        return {graph.chunk_docs[graph.chunk_pos[c]] for c in chunk_ids}

    units = await call(notes.client, "search_units", corpus=CORPUS, query="FA Cup", k=10, filter=clubs)
    assert units["units"] and all(docs_of(u["chunk_ids"]) <= CLUBS for u in units["units"])
    expanded = await call(
        notes.client, "expand_entity", corpus=CORPUS, entity="Nottingham Forest", query=QUESTION, filter=clubs
    )
    assert all(docs_of(u["chunk_ids"]) <= CLUBS for u in expanded["units"])
    linked = await call(notes.client, "link_entities", corpus=CORPUS, query=QUESTION, filter=clubs)
    assert linked["anchors"]


@pytest.mark.parametrize(
    ("filter", "message"),
    [
        ({"doc_ids": ["../../etc/passwd"]}, "unknown doc_ids in filter: '../../etc/passwd'"),
        ({"doc_ids": []}, "`filter.doc_ids`"),
        ({"doc_ids": "teams/forest.md"}, "`filter.doc_ids`"),
        ({"path_glob": "x" * 300}, "`filter.path_glob`"),
        ({"doc_ids": ["x"] * 1001}, "`filter.doc_ids`"),
        ({"folder": "teams"}, "unknown argument `filter.folder`"),
        ("teams/", "`filter`"),
    ],
)
async def test_a_bad_filter_is_a_short_tool_error(notes: Notes, filter: Any, message: str) -> None:
    text = await call_error(notes.client, "q_iter", corpus=CORPUS, query=QUESTION, filter=filter)
    assert message in text and "pydantic" not in text, text


async def test_a_filter_that_selects_nothing_is_an_empty_result_with_a_note(notes: Notes) -> None:
    nothing = {"tags": ["no-such-tag"]}
    listed = await call(notes.client, "list_documents", corpus=CORPUS, filter=nothing)
    assert listed["total"] == 0
    for tool, args in [("q_iter", {}), ("dense_search", {}), ("q_iter", {"detail": "full"})]:
        result = await call(notes.client, tool, corpus=CORPUS, query=QUESTION, filter=nothing, **args)
        assert (result["chunks"], result["note"]) == ([], NO_MATCH), tool
    units = await call(notes.client, "search_units", corpus=CORPUS, query=QUESTION, filter=nothing)
    assert (units["units"], units["note"]) == ([], NO_MATCH)
    linked = await call(notes.client, "link_entities", corpus=CORPUS, query=QUESTION, filter=nothing)
    assert (linked["anchors"], linked["note"]) == ([], NO_MATCH)
    text = await notes.client.call_tool("q_iter", {"corpus": CORPUS, "query": QUESTION, "filter": nothing})
    assert NO_MATCH in text.content[0].text  # type: ignore[union-attr]


async def test_only_ids_that_read_back_get_a_link(notes: Notes) -> None:
    """A JSON record may carry any id; a link the server would then refuse to open is left out,
    and every link given opens."""
    odd = ["../evil", "/abs/x", "a/./b", "a/../b", "x\u0000y"]
    docs = [{"id": i, "title": f"Odd {n}", "text": f"Odd record {n} about the harbour."} for n, i in enumerate(odd)]
    docs.append({"id": "plain", "text": "A plain one."})
    await call(notes.client, "index_corpus", corpus="odd-ids", documents=docs)
    listed = await notes.client.call_tool("list_documents", {"corpus": "odd-ids"})
    assert links(listed) == [document_uri("odd-ids", "plain")]
    for uri in links(listed):
        assert (await notes.client.read_resource(uri)).contents


async def test_themes_browse_search_and_the_sensemaking_prompt(notes: Notes) -> None:
    """Issue 32: the theme tools over MCP, their errors, the theme resource and the prompt."""
    listed = await notes.client.call_tool("themes", {"corpus": CORPUS, "limit": 1})
    assert not listed.is_error and listed.structured_content is not None
    page = listed.structured_content
    assert len(page["themes"]) == 1 and page["total"] >= 1
    theme_id = page["themes"][0]["theme_id"]
    opened = await notes.client.call_tool("themes", {"corpus": CORPUS, "theme_id": theme_id})
    assert opened.structured_content is not None and opened.structured_content["theme"]["theme_id"] == theme_id
    assert "no theme 'nope'" in await call_error(notes.client, "themes", corpus=CORPUS, theme_id="nope")
    assert "has no theme level 9" in await call_error(notes.client, "themes", corpus=CORPUS, level=9)
    found = await notes.client.call_tool("global_search", {"corpus": CORPUS, "query": QUESTION, "budget_tokens": 300})
    assert not found.is_error and found.structured_content is not None
    assert found.structured_content["groups"] and found.structured_content["tokens"] <= 300
    # The text channel reads as text (a model that sees only it got a JSON dump): each theme a
    # heading, each statement a line with where it is from.
    text = found.content[0].text  # type: ignore[union-attr]
    group = found.structured_content["groups"][0]
    assert text.startswith("global search on ") and not text.lstrip().startswith("{")
    assert f"## {group['title']} ({group['theme_id']}" in text
    assert f"- {group['statements'][0]['text']} [" in text
    opened_text = opened.content[0].text  # type: ignore[union-attr]
    assert opened_text.startswith(f"themes of {CORPUS}") and f"({theme_id}, level" in opened_text
    assert '"theme_id"' not in opened_text and '"theme_id"' not in listed.content[0].text  # type: ignore[union-attr]
    read = await notes.client.read_resource(f"cuerag://{CORPUS}/themes/{theme_id}")
    assert theme_id in read.contents[0].text  # type: ignore[union-attr]
    got = await notes.client.get_prompt("sensemaking", {"corpus": CORPUS, "question": QUESTION})
    text = got.messages[0].content.text  # type: ignore[union-attr]
    tools = {t.name for t in (await notes.client.list_tools()).tools}
    assert {"global_search", "themes", "read_document"} <= tools and text.index("global_search") < text.index("themes")
