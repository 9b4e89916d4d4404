"""Hostile input through both front doors, the `cuerag` CLI and the MCP tools: huge documents and
queries, text that is only whitespace, punctuation, emoji or control characters, bytes that are not
UTF-8, NUL characters, deeply nested JSON, paths that leave the allowed roots, odd corpus names,
thousands of tiny documents, and parameters of the wrong type or name.

A refusal is checked twice: its message names the problem, and what was indexed before is still
there, unchanged (every corpus's sizes and the results of a reference query). The MCP server and the
CLI's data folder each get one small `base` corpus per module; the CLI runs in-process with the
session's models, so a call costs a store open rather than a model load.
"""

from __future__ import annotations

import functools
import json
import os
import random
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import pytest
from mcp import Client
from typer.testing import CliRunner, Result

import cuerag.cli.app
import cuerag.cli.context
from cuerag import CueRag, Settings, make_document
from cuerag.config import MAX_QUERY_CHARS
from cuerag.errors import InputError
from cuerag.models.loading import Models
from cuerag.text.tools import TextTools
from server.app import build_server
from server.config import ServerSettings

pytestmark = pytest.mark.anyio

BASE = "base"
BASE_DOCS = [
    {"id": "oslo", "title": "Oslo", "text": "Oslo is the capital of Norway. It lies at the head of the Oslofjord."},
    {"id": "bergen", "title": "Bergen", "text": "Bergen is a city on the west coast of Norway. It rains a lot there."},
    {
        "id": "tromso",
        "title": "Tromsø",
        "text": "Tromsø lies north of the Arctic Circle. The midnight sun shines there.",
    },
]
BASE_QUESTION = "Which city is the capital of Norway?"
SECRET = "The vault combination is 31-47-59, known only to the harbour master."
MAX_QUERY = MAX_QUERY_CHARS  # tools.common.Query's cap

State = tuple[Any, list[tuple[str, float]]]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_bytes_named(folder: Path, name: bytes, data: bytes) -> None:
    """A file whose name is raw bytes (not necessarily UTF-8)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(os.path.join(os.fsencode(folder), name), "wb") as f:
        f.write(data)


def archive_text(chars: int, seed: int) -> tuple[str, list[str]]:
    """About `chars` characters of plausible prose, and the 300 sentences it is drawn from: huge as
    text, yet few distinct knowledge units, so NER and embedding stay cheap."""
    who = ["The river Tees", "Nottingham Forest", "The harbour of Wellington", "Lothair II", "Queen Teutberga"]
    who += ["The city of Salzburg", "Mozart", "The Danube ferry", "The European Cup", "Cook Strait"]
    what = ["is mentioned in", "is described in", "appears in", "was recorded in", "is discussed in"]
    where = [f"volume {n} of the county archive" for n in ("one", "two", "three", "four", "five", "six")]
    pool = [f"{w} {v} {p}." for w in who for v in what for p in where]
    rng = random.Random(seed)
    paragraphs: list[str] = []
    size = 0
    while size < chars:
        paragraphs.append(" ".join(rng.choice(pool) for _ in range(8)))
        size += len(paragraphs[-1]) + 2
    return "\n\n".join(paragraphs), pool


def deep_json() -> str:
    return "[" * 100_000 + "]" * 100_000


def squash(text: str) -> str:
    """Rich wraps messages at the console width: compare them with whitespace collapsed."""
    return " ".join(text.split())


# ---- MCP ----------------------------------------------------------------------------------------


@dataclass
class Mcp:
    client: Client
    root: Path  # the one allowed root
    outside: Path  # a folder beyond it, holding SECRET


@pytest.fixture(scope="module")
async def mcp(models: Models, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Mcp]:
    root = tmp_path_factory.mktemp("allowed")
    outside = tmp_path_factory.mktemp("outside")
    write(outside / "secret.txt", SECRET)
    server = build_server(
        Settings(data_dir=tmp_path_factory.mktemp("mcp-data")),
        ServerSettings(allowed_roots=[root], stepwise=True),
        engine_factory=functools.partial(CueRag, models=models),
    )
    async with Client(server) as client:
        await ok(client, "index_corpus", corpus=BASE, documents=BASE_DOCS)
        yield Mcp(client=client, root=root, outside=outside)


def _text(result: Any) -> str:
    text = result.content[0].text
    assert isinstance(text, str)
    return text


async def ok(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, _text(result)
    assert result.structured_content is not None
    return result.structured_content


async def fails(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error, f"{tool} accepted {args!r:.300}"
    text = _text(result)
    # A crash reaches the caller as this bare line (the traceback stays in the server's log).
    assert text != f"Error executing tool {tool}", f"{tool} crashed on {args!r:.300}"
    return text


async def snapshot(client: Client) -> State:
    corpora = (await ok(client, "list_corpora"))["corpora"]
    hits = (await ok(client, "dense_search", corpus=BASE, query=BASE_QUESTION, top_n=3))["chunks"]
    return corpora, [(h["chunk_id"], h["score"]) for h in hits]


async def refused(client: Client, tool: str, expected: list[str], **args: Any) -> str:
    """Call a tool that must refuse: the message holds every `expected` piece and nothing changed."""
    before = await snapshot(client)
    text = await fails(client, tool, **args)
    assert [e for e in expected if e not in text] == [], text
    assert await snapshot(client) == before
    return text


async def test_mcp_huge_inline_document(mcp: Mcp) -> None:
    text, pool = archive_text(2_000_000, seed=7)
    report = await ok(
        mcp.client, "index_corpus", corpus="huge", documents=[{"id": "archive", "title": "Archive", "text": text}]
    )
    settings = Settings()
    tokens = TextTools().count_tokens(text)
    assert report["documents_added"] == 1
    assert report["chunks_added"] == report["totals"]["chunks"] >= tokens / settings.chunk_tokens > 300
    listed = next(c for c in (await ok(mcp.client, "list_corpora"))["corpora"] if c["name"] == "huge")
    assert (listed["documents"], listed["chunks"]) == (1, report["totals"]["chunks"])

    sentence = pool[123]
    (unit,) = (await ok(mcp.client, "search_units", corpus="huge", query=sentence, k=1))["units"]
    assert unit["text"] == sentence and unit["score"] > 0.99
    assert len(unit["chunk_ids"]) > 10  # one unit shared by the many chunks that repeat it
    hits = (await ok(mcp.client, "q_iter", corpus="huge", query=f"Where is it said that {sentence}"))["chunks"]
    assert hits and {h["doc_id"] for h in hits} == {"archive"}
    chunks = (await ok(mcp.client, "get_chunks", corpus="huge", ids=[h["chunk_id"] for h in hits]))["chunks"]
    assert all(c["text"] in text for c in chunks)


@pytest.mark.parametrize("tool", ["q_iter", "dense_search", "search_units"])
async def test_mcp_query_length_limit(mcp: Mcp, tool: str) -> None:
    text = await refused(
        mcp.client, tool, ["query", f"at most {MAX_QUERY} characters"], corpus=BASE, query="x" * (MAX_QUERY + 1)
    )
    assert "x" * 100 not in text  # the message quotes a cut-down value, not all of it
    words = ("Which city is the capital of Norway? " * 200)[:MAX_QUERY]
    emoji = "🇳🇴" * (MAX_QUERY // 2)  # 4000 code points, 8000 UTF-16 units
    for query in (words, emoji):
        result = await ok(mcp.client, tool, corpus=BASE, query=query)
        assert result["query"] == query
        hits = result["units" if tool == "search_units" else "chunks"]
        assert hits
    answer = await ok(mcp.client, "dense_search", corpus=BASE, query=words, top_n=1)
    assert answer["chunks"][0]["doc_id"] == "oslo"


async def test_mcp_documents_without_words(mcp: Mcp) -> None:
    blank = "\u00a0\u2003\u3000\t\r\n\x0b\x0c"
    await refused(
        mcp.client, "index_corpus", ["no document has any text to index"], corpus="blank", documents=[{"text": blank}]
    )
    # Punctuation, emoji and control characters are text: each document is kept as a chunk, but
    # with no sentence holding a letter or digit it has no knowledge units and no entities. A
    # whitespace-only document in the same batch is dropped.
    odd = [
        {"id": "punct", "text": "... !!! ??? — ;; (( ))"},
        {"id": "emoji", "text": "😀🎉 👩\u200d👩\u200d👧 🇳🇴🇳🇴"},
        {"id": "control", "text": "\x01\x02\x03\x07\x08\x1b\x7f"},
        {"id": "blank", "text": blank},
    ]
    report = await ok(mcp.client, "index_corpus", corpus="odd", documents=odd)
    assert report["documents_added"] == 3
    assert (report["units_added"], report["entities_added"]) == (0, 0)
    assert report["totals"]["documents"] == report["totals"]["chunks"] == 3
    result = await ok(mcp.client, "q_iter", corpus="odd", query="What is the capital of Norway?", detail="full")
    assert sorted(h["doc_id"] for h in result["chunks"]) == ["control", "emoji", "punct"]
    assert all(h["source"] == "dense" for h in result["chunks"])
    by_id = {
        c["doc_id"]: c["text"]
        for c in (await ok(mcp.client, "get_chunks", corpus="odd", ids=[h["chunk_id"] for h in result["chunks"]]))[
            "chunks"
        ]
    }
    assert by_id == {d["id"]: d["text"] for d in odd[:3]}
    assert (await ok(mcp.client, "search_units", corpus="odd", query="capital"))["units"] == []
    assert (await ok(mcp.client, "link_entities", corpus="odd", query="Is Oslo the capital?"))["anchors"] == []


async def test_mcp_text_that_is_not_utf8(mcp: Mcp) -> None:
    latin = mcp.root / "latin1.txt"
    latin.write_bytes("Café au lait, très bien.".encode("latin-1"))
    await refused(
        mcp.client, "index_corpus", ["not valid UTF-8 (byte 3)", str(latin.resolve())], corpus="enc", paths=[str(latin)]
    )
    # A JSON "\udce9" escape decodes to a lone surrogate, which is not Unicode either.
    escaped = write(mcp.root / "escaped.json", '[{"id": "cafe", "title": "Cafe", "text": "caf\\udce9 au lait"}]')
    await refused(mcp.client, "index_corpus", ["document 'cafe'", "lone surrogate"], corpus="enc", paths=[str(escaped)])
    await refused(
        mcp.client,
        "index_corpus",
        ["`documents[0].text`=", "valid string"],
        corpus="enc",
        documents=[{"text": "caf\udce9"}],
    )
    await refused(mcp.client, "q_iter", ["query", "valid string"], corpus=BASE, query="caf\udce9")


async def test_mcp_file_name_that_is_not_utf8(mcp: Mcp) -> None:
    folder = mcp.root / "latin-names"
    write_bytes_named(folder, b"caf\xe9.txt", b"Bergen has a fish market.")
    report = await ok(mcp.client, "index_corpus", corpus="names", paths=[str(folder)])
    assert report["documents_added"] == 1
    (hit,) = (await ok(mcp.client, "dense_search", corpus="names", query="fish market", top_n=1))["chunks"]
    assert (hit["title"], hit["text"]) == ("caf\\xe9", "Bergen has a fish market.")


async def test_mcp_nul_characters(mcp: Mcp) -> None:
    text = "Oslo\x00 has a harbour. The ferry\x00 leaves at noon."
    await ok(mcp.client, "index_corpus", corpus="nul", documents=[{"id": "nul", "title": "Ferry", "text": text}])
    (hit,) = (await ok(mcp.client, "dense_search", corpus="nul", query="ferry\x00 noon", top_n=1))["chunks"]
    assert (hit["doc_id"], hit["text"]) == ("nul", text)
    units = (await ok(mcp.client, "search_units", corpus="nul", query="harbour"))["units"]
    assert {u["text"] for u in units} == {"Oslo\x00 has a harbour.", "The ferry\x00 leaves at noon."}
    # The content id hashes title NUL text: a NUL in a title would let these two share one id.
    twins = [{"title": "a\x00b", "text": "c is here."}, {"title": "a", "text": "b\x00c is here."}]
    await refused(mcp.client, "index_corpus", ["'a\\x00b' holds a NUL character"], corpus="nul", documents=twins)
    await refused(mcp.client, "index_corpus", ["holds a NUL character"], corpus="nul", paths=[f"{mcp.root}/x\x00.txt"])


async def test_mcp_deeply_nested_json(mcp: Mcp) -> None:
    nested = write(mcp.root / "nested.json", deep_json())
    await refused(
        mcp.client, "index_corpus", ["nested too deeply", str(nested.resolve())], corpus="deep", paths=[str(nested)]
    )
    lines = write(mcp.root / "nested.jsonl", '{"title": "A", "text": "Fine."}\n' + deep_json() + "\n")
    await refused(
        mcp.client,
        "index_corpus",
        [f"{lines.resolve()}: line 2: JSON nested too deeply"],
        corpus="deep",
        paths=[str(lines)],
    )
    inner: dict[str, Any] = {"text": "bottom"}
    for _ in range(200):
        inner = {"nested": inner}
    record = write(mcp.root / "record.json", json.dumps([{"title": "A", "text": inner}]))
    await refused(
        mcp.client,
        "index_corpus",
        ["record.json[0]: a record needs a string 'text' field"],
        corpus="deep",
        paths=[str(record)],
    )
    await refused(
        mcp.client, "index_corpus", ["`documents[0].text`=", "valid string"], corpus="deep", documents=[{"text": inner}]
    )


async def test_mcp_paths_outside_the_allowed_roots(mcp: Mcp) -> None:
    secret = mcp.outside / "secret.txt"
    for path in (
        "../../../../../../../../etc/passwd",
        os.path.relpath(secret),  # relative to the server's working directory, through `..`
        "/etc/passwd",
        "/etc",
        "~/.bashrc",
        str(mcp.outside),
    ):
        await refused(
            mcp.client,
            "index_corpus",
            [f"path {path!r} is outside the allowed roots", str(mcp.root)],
            corpus="escape",
            paths=[path],
        )
    # A symlink inside an allowed folder is checked where it leads, even when only the folder is
    # named: it is refused like a bad file and never read, and the rest of the folder is indexed
    # (a link dropped into a watched folder must not stop it).
    leaky = mcp.root / "leaky"
    write(leaky / "good.txt", "Bergen has a fish market.")
    (leaky / "link.txt").symlink_to(secret)
    report = await ok(mcp.client, "index_corpus", corpus="escape", paths=[str(leaky)])
    assert report["documents_added"] == 1
    assert [(f["path"].endswith("link.txt"), "outside the allowed roots" in f["reason"]) for f in report["failed"]] == [
        (True, True)
    ]
    # The advice fits a link found in the folder, not a path the caller gave.
    (reason,) = [f["reason"] for f in report["failed"]]
    assert reason.startswith("leads outside") and "link is skipped" in reason and "give a path" not in reason, reason
    hits = await ok(mcp.client, "dense_search", corpus="escape", query="secret", top_n=5)
    assert [h["doc_id"] for h in hits["chunks"]] == ["good.txt"]
    await refused(  # with strict, the refused link stops the run before anything is written
        mcp.client,
        "index_corpus",
        ["link.txt", "outside the allowed roots"],
        corpus="strict",
        paths=[str(leaky)],
        strict=True,
    )
    (leaky / "link.txt").unlink()
    (mcp.root / "door").symlink_to(mcp.outside, target_is_directory=True)
    await refused(
        mcp.client, "index_corpus", ["outside the allowed roots"], corpus="escape", paths=[str(mcp.root / "door")]
    )
    await refused(
        mcp.client,
        "index_corpus",
        ["outside the allowed roots"],
        corpus="escape",
        paths=[str(mcp.root / "door" / "secret.txt")],
    )


async def test_mcp_paths_that_stay_inside_the_allowed_roots(mcp: Mcp) -> None:
    folder = mcp.root / "inside"
    real = write(folder / "real.txt", "Tromsø has a cathedral built of wood.")
    (folder / "alias.txt").symlink_to(real)  # a link that stays inside is followed
    (folder / "away").symlink_to(mcp.outside, target_is_directory=True)  # folder links are not walked
    report = await ok(mcp.client, "index_corpus", corpus="inside", paths=[str(folder), f"{folder}/../inside/real.txt"])
    assert report["totals"]["documents"] == 2  # real and alias: same text, other titles
    hits = (await ok(mcp.client, "dense_search", corpus="inside", query="vault combination harbour master"))["chunks"]
    assert sorted(h["title"] for h in hits) == ["alias", "real"]
    assert all(SECRET not in h["text"] for h in hits)


NAMES = [
    pytest.param("../x", "invalid corpus name '../x'", id="dot-dot"),
    pytest.param("a/b", "invalid corpus name 'a/b'", id="slash"),
    pytest.param("", "invalid corpus name ''", id="empty"),
    pytest.param("n" * 65, "at most 64 characters", id="65-chars"),
    pytest.param("café", "invalid corpus name 'café'", id="unicode"),
    pytest.param("has space", "invalid corpus name 'has space'", id="space"),
    pytest.param("-dash", "invalid corpus name '-dash'", id="leading-dash"),
    pytest.param("x\x00y", "invalid corpus name 'x\\x00y'", id="nul"),
    # The engine's name pattern ends in `$`, which also matches before a final newline, so the
    # store refuses the collection name instead; either way the name is quoted, nothing is made.
    pytest.param("base\n", "base\\n", id="trailing-newline"),
]


@pytest.mark.parametrize(("name", "expected"), NAMES)
async def test_mcp_odd_corpus_names(mcp: Mcp, name: str, expected: str) -> None:
    doc = {"text": "Narvik is a port in northern Norway."}
    await refused(mcp.client, "index_corpus", [expected], corpus=name, documents=[doc])
    await refused(mcp.client, "q_iter", [expected], corpus=name, query=BASE_QUESTION)
    await refused(mcp.client, "delete_documents", [expected], corpus=name, doc_ids=["oslo"])


async def test_mcp_longest_name_and_names_that_differ_in_case(mcp: Mcp) -> None:
    longest = "n" * 64
    await ok(mcp.client, "index_corpus", corpus=longest, documents=[{"id": "narvik", "text": "Narvik is a port."}])
    await ok(
        mcp.client,
        "index_corpus",
        corpus="Fjord",
        documents=[{"id": "geiranger", "text": "Geiranger lies on a fjord."}],
    )
    # A name that differs from an existing corpus only in case is refused (issue 14, item 11): on
    # a case-insensitive filesystem (macOS) the two would be one folder, mixing their documents.
    for twin in ("fjord", "FJORD", "fJoRd"):
        await refused(
            mcp.client,
            "index_corpus",
            [f"corpus name {twin!r} differs from the existing corpus 'Fjord' only in case"],
            corpus=twin,
            documents=[{"id": "sogn", "text": "Sognefjord is the longest fjord."}],
        )
    sizes = {c["name"]: c["documents"] for c in (await ok(mcp.client, "list_corpora"))["corpora"]}
    assert (sizes[longest], sizes["Fjord"]) == (1, 1) and "fjord" not in sizes
    assert [h["doc_id"] for h in (await ok(mcp.client, "dense_search", corpus="Fjord", query="fjord"))["chunks"]] == [
        "geiranger"
    ]
    # Lookups stay exact, and the error points at the corpus meant.
    await refused(
        mcp.client, "dense_search", ["unknown corpus 'FJORD'", "did you mean 'Fjord'?"], corpus="FJORD", query="fjord"
    )


async def test_mcp_thousands_of_tiny_documents(mcp: Mcp) -> None:
    first = [f"Station {n} opened in {1850 + n}." for n in range(60)]
    second = [f"Its platform {n} was rebuilt later." for n in range(50)]
    docs = [{"id": f"tiny-{i}", "text": f"{first[i % 60]} {second[i // 60]}"} for i in range(3000)]
    report = await ok(mcp.client, "index_corpus", corpus="tiny", documents=docs)
    assert report["documents_added"] == 3000
    assert report["totals"]["documents"] == report["totals"]["chunks"] == 3000
    assert report["totals"]["units"] == len(first) + len(second)  # sentences shared across documents are one unit
    listed = next(c for c in (await ok(mcp.client, "list_corpora"))["corpora"] if c["name"] == "tiny")
    sizes = {k: report["totals"][k] for k in ("documents", "chunks", "units", "entities")}
    assert listed == {"name": "tiny", **sizes, "description": None}
    (hit,) = (await ok(mcp.client, "dense_search", corpus="tiny", query=docs[1234]["text"], top_n=1))["chunks"]
    assert hit["doc_id"] == "tiny-1234"
    again = await ok(mcp.client, "index_corpus", corpus="tiny", documents=docs)
    assert (again["documents_unchanged"], again["chunks_added"], again["totals"]) == (3000, 0, report["totals"])


BAD_ARGUMENTS: list[tuple[str, dict[str, Any], list[str]]] = [
    ("q_iter", {"top_n": -1}, ["`top_n`=-1", "greater than or equal to 1", "give an integer from 1 to 100"]),
    ("dense_search", {"top_n": -5}, ["`top_n`=-5", "greater than or equal to 1", "from 1 to 100"]),
    ("search_units", {"k": -1}, ["`k`=-1", "greater than or equal to 1", "give an integer from 1 to 50"]),
    ("q_iter", {"top_n": "five"}, ['`top_n`="five"', "valid integer"]),
    ("q_iter", {"depth": 2.5}, ["`depth`=2.5", "valid integer", "from 0 to 10"]),
    ("dense_search", {"query": 42}, ["`query`=42", "valid string", "a string of 1 to 4000 characters"]),
    ("dense_search", {"query": None}, ["`query`=null", "valid string"]),
    ("search_units", {"exclude": "not-a-list"}, ["`exclude`=", "valid list", 'e.g. ["not-a-list"]']),
    ("search_units", {"exclude": "u-1, u-2"}, ["`exclude`=", "valid list", 'e.g. ["u-1", "u-2"]']),
    ("get_chunks", {"ids": [1, 2]}, ["`ids[0]`=1", "`ids[1]`=2", "valid string"]),
    ("q_iter", {"topn": 2}, ["unknown argument `topn`", "top_n"]),
    ("dense_search", {"top_k": 2}, ["unknown argument `top_k`", "top_n"]),
    ("search_units", {"corpus_name": BASE}, ["unknown argument `corpus_name`", "corpus, query"]),
]


@pytest.mark.parametrize(
    ("tool", "args", "expected"), BAD_ARGUMENTS, ids=[f"{t}-{next(iter(a))}" for t, a, _ in BAD_ARGUMENTS]
)
async def test_mcp_wrong_parameters(mcp: Mcp, tool: str, args: dict[str, Any], expected: list[str]) -> None:
    needed: dict[str, Any] = {"corpus": BASE, **({"ids": ["x"]} if tool == "get_chunks" else {"query": BASE_QUESTION})}
    text = await refused(mcp.client, tool, expected, **{**needed, **args})
    # One line for the agent to act on, not pydantic's report with its links.
    assert text.startswith(f"invalid arguments to {tool}: ") and "\n" not in text and "pydantic" not in text, text


async def test_mcp_wrong_parameters_of_the_write_tools(mcp: Mcp) -> None:
    doc = {"id": "narvik", "text": "Narvik is a port."}
    await refused(
        mcp.client,
        "index_corpus",
        ["`documents`=", "valid list", 'e.g. ["Narvik is a port."]'],
        corpus=BASE,
        documents="Narvik is a port.",
    )
    await refused(
        mcp.client,
        "index_corpus",
        ["unknown argument `documents[0].doc_id`", "title, text, id"],
        corpus=BASE,
        documents=[{"doc_id": "n", "text": "x"}],
    )
    await refused(mcp.client, "index_corpus", ["unknown argument `document`", "documents"], corpus=BASE, document=[doc])
    await refused(mcp.client, "delete_documents", ['`doc_ids`="oslo"', "valid list"], corpus=BASE, doc_ids="oslo")
    await refused(
        mcp.client,
        "delete_documents",
        ["unknown argument `ids`", "doc_ids"],
        corpus=BASE,
        doc_ids=["nope"],
        ids=["oslo"],
    )
    await refused(mcp.client, "list_corpora", ["unknown argument `verbose`", "it takes no arguments"], verbose=True)


LOOSE_VALUES: list[tuple[str, dict[str, Any], str]] = [
    # Strict typing, as the schema says (issue 14, "Also"): no string, boolean or float for an
    # integer, no string for a boolean, however readable it looks.
    ("dense_search", {"top_n": "3"}, "valid integer"),
    ("dense_search", {"top_n": True}, "valid integer"),
    ("dense_search", {"top_n": 3.0}, "valid integer"),
    ("q_iter", {"top_n": "3"}, "valid integer"),
    ("q_iter", {"k": "2"}, "valid integer"),
    ("q_iter", {"depth": False}, "valid integer"),
    ("search_units", {"k": "5"}, "valid integer"),
]


@pytest.mark.parametrize(
    ("tool", "args", "expected"), LOOSE_VALUES, ids=[f"{t}-{next(iter(a))}-{a}" for t, a, _ in LOOSE_VALUES]
)
async def test_mcp_loose_values_are_refused(mcp: Mcp, tool: str, args: dict[str, Any], expected: str) -> None:
    await refused(mcp.client, tool, [next(iter(args)), expected], corpus=BASE, query=BASE_QUESTION, **args)


async def test_mcp_exact_types_are_accepted(mcp: Mcp) -> None:
    result = await ok(mcp.client, "dense_search", corpus=BASE, query=BASE_QUESTION, top_n=2)
    assert [h["doc_id"] for h in result["chunks"]][:1] == ["oslo"] and len(result["chunks"]) == 2
    traced = await ok(mcp.client, "q_iter", corpus=BASE, query=BASE_QUESTION, top_n=1, detail="full")
    assert len(traced["chunks"]) == 1


# ---- servers of their own: no allowed root, secrets in URLs, a full disk, a broken store, a cancel --


def own_server(models: Models, data: Path, server: ServerSettings | None = None, **engine: Any) -> Any:
    """A server on its own data folder; `engine` keyword arguments go to CueRag (the free-space
    seam); settings with a Qdrant URL still run on the embedded store (nothing listens there)."""

    def factory(settings: Settings) -> CueRag:
        return CueRag(settings.model_copy(update={"qdrant_url": None}), models=models, **engine)

    return build_server(Settings(data_dir=data), server or ServerSettings(), engine_factory=factory)


async def test_mcp_without_an_allowed_root_path_indexing_is_off(
    models: Models, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A desktop host may start the server in any folder (often / or the home folder): the working
    # directory is no longer a default root (issue 14, item 3).
    home = tmp_path / "home"
    secret = write(home / ".bashrc.md", SECRET)
    notes = write(home / "notes.txt", "Narvik is a port in northern Norway.")
    monkeypatch.chdir(home)
    assert ServerSettings().allowed_roots == []
    async with Client(own_server(models, tmp_path / "data")) as client:
        for paths in ([str(notes)], ["notes.txt"], [str(secret)], [str(home)], ["/etc/passwd"]):
            text = await fails(client, "index_corpus", corpus="c", paths=paths)
            assert "--allowed-root" in text and "claude_desktop_config.json" in text and "`documents`" in text, text
        assert (await ok(client, "list_corpora"))["corpora"] == []
        inline = await ok(client, "index_corpus", corpus="c", documents=[{"text": "Narvik is a port."}])
        assert inline["documents_added"] == 1
        hits = (await ok(client, "dense_search", corpus="c", query="vault combination harbour master"))["chunks"]
        assert all("31-47-59" not in h["text"] for h in hits)


LEAKS = ["alice", "pw-LEAK-1", "LEAK-2", "bob", "LEAK-3", "LEAK-4", "LEAK-5"]


async def test_mcp_config_resource_redacts_url_credentials(models: Models, tmp_path: Path) -> None:
    settings = {
        "llm_base_url": "http://alice:pw-LEAK-1@llm.example:8080/v1?api-key=LEAK-2&model=small",
        "qdrant_url": "https://bob:LEAK-3@qdrant.example:6333/?Token=LEAK-4&X-Amz-Signature=LEAK-5",
    }
    server = build_server(
        Settings(data_dir=tmp_path / "data", **settings),  # type: ignore[arg-type]
        ServerSettings(),
        engine_factory=lambda s: CueRag(s.model_copy(update={"qdrant_url": None}), models=models),
    )
    async with Client(server) as client:
        text = (await client.read_resource("config://server")).contents[0].text  # type: ignore[union-attr]
    assert [leak for leak in LEAKS if leak in text] == [], text
    engine = json.loads(text)["engine"]
    # Still says where the endpoints are, and which parameters were set.
    assert engine["llm_base_url"] == "http://***@llm.example:8080/v1?api-key=***&model=small"
    assert engine["qdrant_url"] == "https://***@qdrant.example:6333/?Token=***&X-Amz-Signature=***"


def test_llm_errors_and_logs_redact_url_credentials(caplog: pytest.LogCaptureFixture) -> None:
    from cuerag.errors import LLMError
    from cuerag.llm.client import make_llm

    settings = Settings(
        llm_provider="openai",
        llm_model="m",
        llm_base_url="http://alice:pw-LEAK-1@127.0.0.1:9/v1?api-key=LEAK-2",
        llm_max_retries=1,
        llm_cache=False,
    )
    llm = make_llm(settings)
    assert llm is not None
    with caplog.at_level("WARNING"), pytest.raises(LLMError) as failed:
        llm.complete("system", "user", max_tokens=16)  # nothing listens on port 9: refused at once
    shown = str(failed.value) + "\n".join(r.getMessage() for r in caplog.records)
    assert "127.0.0.1:9" in shown
    assert [leak for leak in LEAKS if leak in shown] == [], shown


@pytest.mark.parametrize(
    ("base_url", "key", "secrets"),
    [
        ("http://127.0.0.1:{port}/v1", "sk-LEAK-key-3", ["sk-LEAK-key-3"]),
        ("http://alice:pw-LEAK-4@127.0.0.1:{port}/v1", None, ["pw-LEAK-4", "YWxpY2U6cHctTEVBSy00"]),
    ],
)
def test_llm_errors_mask_credentials_an_endpoint_echoes(base_url: str, key: str | None, secrets: list[str]) -> None:
    """An endpoint that answers 401 with the request's Authorization header in its body (some
    proxies do): the error the client sees must not carry the key, nor the Basic credentials."""
    import http.server
    import threading

    from pydantic import SecretStr

    from cuerag.errors import LLMError
    from cuerag.llm.client import make_llm

    class Echo(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = json.dumps({"error": {"message": f"bad credentials: {self.headers.get('Authorization')}"}})
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        llm = make_llm(
            Settings(
                llm_provider="openai",
                llm_model="m",
                llm_base_url=base_url.format(port=httpd.server_address[1]),
                llm_api_key=SecretStr(key) if key else None,
                llm_max_retries=0,
                llm_cache=False,
            )
        )
        assert llm is not None
        with pytest.raises(LLMError) as failed:
            llm.complete("system", "user", max_tokens=16)
    finally:
        httpd.shutdown()
    assert "bad credentials" in str(failed.value)  # the endpoint's answer is there, masked
    assert [leak for leak in secrets if leak in str(failed.value)] == [], str(failed.value)


async def test_mcp_full_disk_is_refused_with_what_it_needs(models: Models, tmp_path: Path) -> None:
    # The free-space seam says 100 MB: under the 256 MB margin (issue 14, item 4).
    from cuerag.store.diskspace import MB

    server = own_server(models, tmp_path / "data", free_bytes=lambda _: 100 * MB)
    async with Client(server) as client:
        text = await fails(client, "index_corpus", corpus="c", documents=BASE_DOCS)
        for expected in ("not enough free disk space", "MB must stay free", "100.0 MB free", "CUERAG_MIN_FREE_MB"):
            assert expected in text, text
        assert (await ok(client, "list_corpora"))["corpora"] == []  # not even an empty corpus left


def test_disk_filling_during_a_run_stops_it_between_batches(models: Models, tmp_path: Path) -> None:
    """Free space that runs out half-way (another program filling the disk): the run stops before
    its next batch, names the cause, and leaves the corpus as it was, orphans cleared."""
    import cuerag.index.pipeline as index_module
    from cuerag.errors import StorageFullError
    from cuerag.graph.schema import KINDS, collection_name

    disk = FillingDisk()
    engine = CueRag(Settings(data_dir=tmp_path / "data"), models=models, free_bytes=disk)
    try:
        engine.index_documents(BASE, [make_document(d["title"], d["text"], d["id"]) for d in BASE_DOCS])
        before = engine.info(BASE)
        disk.readings_left = 3  # three batches' worth of room, then a full disk
        docs = [make_document(f"Halt {n}", f"Halt {n} is a railway stop on line {n}.", f"halt-{n}") for n in range(300)]
        patch = pytest.MonkeyPatch()
        patch.setattr(index_module, "_WRITE_BATCH", 64)
        try:
            with pytest.raises(StorageFullError, match=r"10\.0 MB free"):
                engine.index_documents(BASE, docs)
        finally:
            patch.undo()
        assert engine.info(BASE) == before
        g = engine.graph(BASE)
        stored = {k: engine.store.count(collection_name(BASE, k)) for k in KINDS}
        assert stored == {"chunks": len(g.chunk_ids), "units": len(g.unit_ids), "entities": len(g.entity_ids)}
    finally:
        engine.close()


async def test_mcp_store_errors_name_their_cause(models: Models, tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with Client(own_server(models, data)) as client:
        await ok(client, "index_corpus", corpus="c", documents=BASE_DOCS)
    # A damaged collection (a disk error, a half-copied folder): every tool that reads it says
    # which collection and what is wrong, instead of "Error executing tool list_corpora".
    (data / "qdrant-edge" / "cuerag--c--chunks" / "edge_config.json").write_text("{ not json")
    async with Client(own_server(models, data)) as client:
        for tool, args in (("list_corpora", {}), ("dense_search", {"corpus": "c", "query": "Oslo"})):
            text = await fails(client, tool, **args)
            # The collection, and the store's own words for what is wrong with it.
            assert "cuerag--c--chunks" in text and ("JSONDecodeError" in text or "key must be a string" in text), text


class FillingDisk:
    """The free-space seam: plenty of room until `readings_left` runs out, then 10 MB."""

    def __init__(self) -> None:
        self.readings_left: int | None = None

    def __call__(self, path: Path) -> int:
        if self.readings_left is None:
            return 1 << 40
        self.readings_left -= 1
        return 1 << 40 if self.readings_left >= 0 else 10 << 20


async def test_mcp_cancelling_index_corpus_stops_it(models: Models, tmp_path: Path) -> None:
    """`notifications/cancelled` from a real client (the SDK sends it when the call is abandoned)
    stops the run at its next step: nothing of it is served, no orphan is left, and the server
    goes on (issue 14, item 9)."""
    from cuerag.graph.schema import KINDS, collection_name

    engines: list[CueRag] = []

    def factory(settings: Settings) -> CueRag:
        engines.append(CueRag(settings, models=models))
        return engines[-1]

    server = build_server(Settings(data_dir=tmp_path / "data"), ServerSettings(), engine_factory=factory)
    docs = [
        {"id": f"halt-{n}", "text": f"Halt {n} is a railway stop on line {n % 40} near village {n}."}
        for n in range(3000)
    ]
    async with Client(server) as client:
        await ok(client, "index_corpus", corpus=BASE, documents=BASE_DOCS)
        before = await snapshot_of(client, BASE)
        started = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if message and message.startswith("ner"):
                started.set()  # past splitting: the run is under way

        async with anyio.create_task_group() as tg:

            async def call() -> None:
                await client.call_tool(
                    "index_corpus", {"corpus": BASE, "documents": docs}, progress_callback=on_progress
                )

            tg.start_soon(call)
            await started.wait()
            tg.cancel_scope.cancel()  # the client abandons the call: the SDK sends notifications/cancelled

        # The run lets go of the corpus at its next step; until then a second writer is told so.
        while True:
            result = await client.call_tool("index_corpus", {"corpus": BASE, "documents": BASE_DOCS})
            if not result.is_error:
                break
            assert "being written by another index run" in _text(result)
            await anyio.sleep(0.2)
        assert result.structured_content is not None
        assert result.structured_content["documents_unchanged"] == len(BASE_DOCS)
        assert await snapshot_of(client, BASE) == before  # nothing of the cancelled run is served
        engine = engines[0]
        g = engine.graph(BASE)
        stored = {k: engine.store.count(collection_name(BASE, k)) for k in KINDS}
        assert stored == {"chunks": len(g.chunk_ids), "units": len(g.unit_ids), "entities": len(g.entity_ids)}


async def snapshot_of(client: Client, corpus: str) -> Any:
    corpora = (await ok(client, "list_corpora"))["corpora"]
    hits = (await ok(client, "dense_search", corpus=corpus, query="railway stop near a village", top_n=3))["chunks"]
    return corpora, [h["chunk_id"] for h in hits]


# ---- CLI ----------------------------------------------------------------------------------------


class Bad(NamedTuple):
    """A command that must be refused: its arguments, what its message must say, its exit code."""

    args: list[str]
    expected: list[str]
    code: int = 1


@dataclass
class Cli:
    """`cuerag` in-process on one data folder. `refused` checks a batch of bad commands against
    the state before and after; the state is cached while only refusals run."""

    runner: CliRunner
    data: Path
    files: Path
    _state: State | None = None

    def __call__(self, *args: str) -> Result:
        self._state = None
        return self._invoke(*args)

    def _invoke(self, *args: str) -> Result:
        result = self.runner.invoke(cuerag.cli.app.app, list(args), env={"CUERAG_DATA_DIR": str(self.data)})
        crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
        assert not crashed, f"cuerag {args!r:.200} crashed: {result.exception!r}"
        return result

    def _json(self, *args: str) -> Any:
        result = self._invoke(*args, "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    def json(self, *args: str) -> Any:
        self._state = None
        return self._json(*args)

    def state(self) -> State:
        hits = self._json("query", BASE_QUESTION, "--corpus", BASE, "--method", "dense", "--top-n", "3")["chunks"]
        return self._json("corpora"), [(h["chunk_id"], h["score"]) for h in hits]

    def refused(self, *cases: Bad) -> None:
        before = self._state or self.state()
        for case in cases:
            result = self._invoke(*case.args)
            text = squash(result.output)
            assert result.exit_code == case.code, (case.args, text)
            assert [e for e in case.expected if e not in text] == [], (case.args, text)
        self._state = self.state()
        assert self._state == before

    def elsewhere(self, name: str) -> Cli:
        """The CLI on a data folder of its own: a test that indexes there keeps the shared one small
        (every `corpora` call opens each corpus)."""
        return Cli(self.runner, self.files / name / "data", self.files)


@pytest.fixture(scope="module")
def cli(models: Models, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    files = tmp_path_factory.mktemp("cli-files")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cuerag.cli.context, "make_own_engine", functools.partial(CueRag, models=models))
        runner = Cli(CliRunner(), tmp_path_factory.mktemp("cli-data"), files)
        report = runner.json("index", str(write(files / "base.json", json.dumps(BASE_DOCS))), "--corpus", BASE)
        assert report["documents_added"] == len(BASE_DOCS)
        yield runner


def test_cli_huge_file(cli: Cli) -> None:
    text, pool = archive_text(1_000_000, seed=11)
    path = write(cli.files / "harbour.md", "# Harbour Archive\n\n" + text)
    own = cli.elsewhere("huge")
    report = own.json("index", str(path), "--corpus", "huge")
    assert report["documents_added"] == 1
    tokens = TextTools().count_tokens(text)
    assert report["chunks_added"] == report["totals"]["chunks"] >= tokens / Settings().chunk_tokens > 150
    (listed,) = own.json("corpora")
    assert (listed["name"], listed["documents"], listed["chunks"]) == ("huge", 1, report["totals"]["chunks"])
    result = own.json("query", pool[42], "--corpus", "huge")
    assert result["chunks"] and all(h["title"] == "Harbour Archive" and h["text"] in text for h in result["chunks"])
    assert any(pool[42] in u for d in result["trace"]["depths"] for p in d["paths"] for u in p["unit_texts"])


def test_cli_files_without_words(cli: Cli) -> None:
    blank = write(cli.files / "blank" / "blank.txt", "\u00a0\u3000 \t\n\n  ")
    cli.refused(Bad(["index", str(blank), "--corpus", "odd"], ["file holds only whitespace", "blank.txt"]))
    folder = cli.files / "odd"
    write(folder / "punct.txt", "... !!! ??? — ;; (( ))")
    write(folder / "emoji.txt", "😀🎉 👩\u200d👩\u200d👧 🇳🇴🇳🇴")
    write(folder / "control.txt", "\x01\x02\x03\x07\x08\x1b\x7f")
    own = cli.elsewhere("odd")
    report = own.json("index", str(folder), "--corpus", "odd")
    # Kept as chunks (their titles, the file names, may still be entities) but without units.
    assert (report["documents_added"], report["units_added"], report["totals"]["units"]) == (3, 0, 0)
    result = own.json("query", "What is the capital of Norway?", "--corpus", "odd")
    assert sorted(h["title"] for h in result["chunks"]) == ["control", "emoji", "punct"]


def test_cli_bytes_that_are_not_utf8(cli: Cli) -> None:
    folder = cli.files / "mixed"
    write(folder / "a-good.txt", "Narvik is a port in northern Norway.")
    (folder / "b-latin1.txt").write_bytes("Café au lait, très bien.".encode("latin-1"))
    binary = cli.files / "binary.txt"
    binary.write_bytes(b"Narvik\x00\x01\x02 is a port.")
    escaped = write(cli.files / "escaped.jsonl", '{"id": "cafe", "title": "Cafe", "text": "caf\\udce9 au lait"}\n')
    cli.refused(
        # With --strict, one bad file stops the run: the good file beside it is not indexed either.
        Bad(
            ["index", str(folder), "--corpus", "enc", "--strict"],
            ["file is not valid UTF-8 (byte 3)", "b-latin1.txt", "nothing was written"],
        ),
        Bad(["index", str(binary), "--corpus", "enc"], ["file looks binary (NUL bytes)", "binary.txt"]),
        Bad(["index", str(escaped), "--corpus", "enc"], ["document 'cafe'", "lone surrogate"]),
        Bad(["index", f"{cli.files}/x\x00.txt", "--corpus", "enc"], ["Invalid value for 'paths'", "null byte"], 2),
    )
    # Without it, the bad file is a line in the report and the good one is indexed.
    report = cli.elsewhere("enc").json("index", str(folder), "--corpus", "enc")
    assert [f["reason"] for f in report["failed"]] == ["file is not valid UTF-8 (byte 3); convert it to UTF-8 first"]
    assert report["documents_added"] == 1


def test_cli_file_name_that_is_not_utf8(cli: Cli) -> None:
    folder = cli.files / "latin-names"
    write_bytes_named(folder, b"caf\xe9.txt", b"Bergen has a fish market.")
    own = cli.elsewhere("names")
    assert own.json("index", str(folder), "--corpus", "names")["documents_added"] == 1
    (hit,) = own.json("query", "fish market", "--corpus", "names", "--method", "dense", "--top-n", "1")["chunks"]
    assert (hit["title"], hit["text"]) == ("caf\\xe9", "Bergen has a fish market.")


def test_cli_deeply_nested_json(cli: Cli) -> None:
    nested = write(cli.files / "nested.json", deep_json())
    lines = write(cli.files / "nested.jsonl", deep_json() + "\n")
    cli.refused(
        Bad(["index", str(nested), "--corpus", "deep"], ["JSON nested too deeply", "nested.json"]),
        Bad(["index", str(lines), "--corpus", "deep"], ["nested.jsonl: line 1: JSON nested too deeply"]),
    )


def test_cli_odd_corpus_names(cli: Cli) -> None:
    path = write(cli.files / "narvik.txt", "Narvik is a port in northern Norway.")
    cases = []
    for param in NAMES:
        name, expected = param.values
        assert isinstance(name, str) and isinstance(expected, str)
        # The MCP schema checks the length first; here the engine's name check says it.
        expected = {"": "invalid corpus name ''", "n" * 65: "invalid corpus name 'nnnn"}.get(name, expected)
        cases += [
            Bad(["index", str(path), "--corpus", name], [expected]),
            Bad(["query", BASE_QUESTION, "--corpus", name], [expected]),
            Bad(["drop", "--corpus", name, "--yes"], [expected]),
        ]
    cli.refused(*cases)


def test_cli_names_are_case_sensitive(cli: Cli) -> None:
    path = write(cli.files / "bodo.txt", "Bodø is a town north of the Arctic Circle.")
    cli.refused(
        Bad(["index", str(path), "--corpus", "Base"], ["corpus name 'Base' differs from the existing corpus 'base'"]),
        Bad(["index", str(path), "--corpus", "BASE"], ["only in case", "macOS"]),
        Bad(["query", BASE_QUESTION, "--corpus", "BASE"], [f"unknown corpus 'BASE'; corpora that exist: {BASE}"]),
        Bad(["drop", "--corpus", "Base", "--yes"], ["unknown corpus 'Base'"]),
        Bad(["delete", "oslo", "--corpus", "Base"], ["unknown corpus 'Base'"]),
    )


def test_cli_wrong_parameters(cli: Cli) -> None:
    query = ["query", BASE_QUESTION, "--corpus", BASE]
    cli.refused(
        Bad([*query, "--top-n", "-1"], ["invalid options: --top-n", "(got -1; allowed 1..100)"]),
        Bad([*query, "--k", "0", "--depth", "99"], ["k: Input should be greater than or equal to 1", "depth:"]),
        Bad([*query, "--top-n", "five"], ["Invalid value for '--top-n'"], 2),
        Bad([*query, "--title-links", "-1"], ["invalid options: --title-links", "(got -1; allowed 0..20)"]),
        Bad([*query, "--topn", "2"], ["No such option: --topn"], 2),
        Bad([*query, "--method", "magic"], ["unknown method 'magic'"]),
        Bad(["query", "   ", "--corpus", BASE], ["the query is empty"]),
        Bad(["delete", "--corpus", BASE], ["Missing argument"], 2),
        Bad(["drop", "--corpus", BASE], ["add --yes to confirm"]),
    )
    report = cli("delete", "../../etc/passwd", "--corpus", BASE)  # a document id is any string
    assert report.exit_code == 0 and "not found: ../../etc/passwd" in squash(report.output)
    assert cli.state()[0][0]["documents"] == len(BASE_DOCS)


ESCAPES = "Narvik \x1b]0;owned\x07 is a port.\x1b[2J"


def test_cli_json_output_escapes_control_characters(cli: Cli) -> None:
    own = cli.elsewhere("escapes-json")
    own.json("index", str(write(cli.files / "escapes.txt", ESCAPES)), "--corpus", "escapes")
    result = own("query", "Narvik port", "--corpus", "escapes", "--json")
    assert "\x1b" not in result.stdout
    assert json.loads(result.stdout)["chunks"][0]["text"] == ESCAPES


def test_cli_table_output_does_not_replay_terminal_escapes(cli: Cli) -> None:
    own = cli.elsewhere("escapes-table")
    own.json("index", str(write(cli.files / "escapes.txt", ESCAPES)), "--corpus", "escapes")
    result = own("query", "Narvik port", "--corpus", "escapes")
    assert result.exit_code == 0
    assert "\x1b" not in result.stdout


def test_cli_query_with_bytes_that_are_not_utf8(cli: Cli) -> None:
    # A shell hands `cuerag query $'caf\xe9'` to Python as "caf\udce9".
    cli.refused(Bad(["query", "caf\udce9", "--corpus", BASE], ["not valid Unicode"]))


def test_cli_query_with_markup_characters(cli: Cli) -> None:
    result = cli("query", f"[/x] [bold]{BASE_QUESTION}", "--corpus", BASE)
    assert result.exit_code == 0
    assert f"[/x] [bold]{BASE_QUESTION}" in squash(result.stdout)


def test_cli_on_a_disk_that_fills_up(tmp_path: Path) -> None:
    """A real small filesystem with 3 MB free (issue 14, item 4): the index run is refused before
    it writes, with what it needs, instead of the store filling the disk and dying of SIGBUS."""
    from conftest import server_env
    from mounts import fill, tmpfs

    docs = [
        {"id": f"halt-{n}", "title": f"Halt {n}", "text": f"Halt {n} is a stop on line {n % 9} near {n}."}
        for n in range(400)
    ]
    corpus = write(tmp_path / "halts.json", json.dumps(docs))
    with tmpfs(tmp_path / "disk", size_mb=48) as disk:
        fill(disk, leave_mb=3)
        env = {**server_env(), "CUERAG_DATA_DIR": str(disk / "data"), "CUERAG_MIN_FREE_MB": "1"}
        proc = subprocess.run(
            [sys.executable, "-m", "cuerag.cli.app", "index", str(corpus), "--corpus", "halts"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        said = squash(proc.stderr)
        assert proc.returncode == 1, (proc.returncode, said[-3000:])
        # Refused when the corpus is created or before its first batch, depending on the margin.
        assert "not enough free disk space for" in said and "it needs about" in said, said[-3000:]
        assert "MB must stay free (CUERAG_MIN_FREE_MB)" in said
        assert "Traceback" not in said
        listed = subprocess.run(
            [sys.executable, "-m", "cuerag.cli.app", "corpora", "--json"], env=env, capture_output=True, text=True
        )
        assert listed.returncode == 0 and json.loads(listed.stdout) == [], listed.stderr[-2000:]


# ---- reading files: races and memory (issue 14, items 2 and 8) ----------------------------------


def test_file_swapped_for_a_symlink_after_its_check_is_never_read(tmp_path: Path) -> None:
    """The walk checks a file inside the allowed root; before the read, the file is replaced by a
    symlink to a secret outside it (the attacker's rename). The file is then opened once and
    checked again where that descriptor really leads, so the swap is refused before a byte of the
    secret is read."""
    from cuerag.index.sync import load_paths
    from tools.index_corpus import check_allowed

    root, outside = tmp_path / "allowed", tmp_path / "outside"
    secret = write(outside / "secret.txt", SECRET)
    note = write(root / "note.txt", "Bergen has a fish market.")
    note_real = note.resolve()
    checked: list[Path] = []

    def check_then_swap(path: Path) -> None:
        checked.append(check_allowed(str(path), [root]))
        if path.name == "note.txt":
            swap = root / "swap.tmp"
            swap.symlink_to(secret)
            os.replace(swap, note)  # atomic: `note.txt` is now the symlink

    with pytest.raises(InputError, match=r"note\.txt opens .*secret\.txt.*outside the allowed roots") as err:
        load_paths([root], check=check_then_swap)
    assert checked == [note_real]  # the walk's check by name passed; the descriptor's refused
    assert SECRET not in str(err.value)


@pytest.mark.parametrize("path", ["~no-such-user-cuerag/notes", "~no-such-user-cuerag"])
def test_a_path_at_the_home_of_no_user_is_refused_not_a_crash(tmp_path: Path, path: str) -> None:
    """`~name` where no user is named so: expanduser raised a bare RuntimeError (the tool crashed,
    and told an existing user's home from a missing one)."""
    from tools.index_corpus import check_allowed

    with pytest.raises(InputError, match="home folder of no user"):
        check_allowed(path, [tmp_path])


def _big_objects_held(exc: BaseException, limit: int = 2**20) -> list[tuple[str, int]]:
    """Objects over `limit` bytes or characters that an exception keeps alive: its arguments and
    attributes, the bytes of a decode error, and the locals of every frame in its traceback,
    through its causes and contexts."""
    found: list[tuple[str, int]] = []
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        stack.extend(x for x in (e.__cause__, e.__context__) if x is not None)
        values: list[tuple[str, object]] = [("arg", a) for a in e.args] + list(vars(e).items())
        if isinstance(e, UnicodeDecodeError):
            values.append(("object", e.object))
        tb = e.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename != __file__:  # the test's own frame holds the data it wrote
                values += [(f"{tb.tb_frame.f_code.co_name}:{k}", v) for k, v in tb.tb_frame.f_locals.items()]
            tb = tb.tb_next
        for name, value in values:
            items = value if isinstance(value, list) else [value]
            for item in items:
                if isinstance(item, bytes | bytearray | memoryview | str) and len(item) > limit:
                    found.append((name, len(item)))
    return found


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("latin1.txt", b"a" * (8 * 2**20) + b"caf\xe9", "not valid UTF-8"),
        ("nul.md", b"a" * (8 * 2**20) + b"\x00", r"binary \(NUL bytes\)"),
        ("broken.json", b"[" + b"1," * (4 * 2**20), "not valid JSON"),
    ],
)
def test_a_refused_file_keeps_none_of_its_bytes(tmp_path: Path, name: str, data: bytes, message: str) -> None:
    """The error that refuses a big file must not hold the file: not in a decode error, not in the
    frames of its traceback (a server keeps the last errors around and grew by the file's size)."""
    from cuerag.index.sync import load_paths

    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(InputError, match=message) as err:
        load_paths([path])
    assert _big_objects_held(err.value) == []


async def test_mcp_one_request_reads_at_most_max_request_bytes(models: Models, tmp_path: Path) -> None:
    root = tmp_path / "files"
    for n in range(3):
        write(root / f"note-{n}.txt", f"Note {n}: " + "The harbour of Bergen is busy. " * 20)  # ~600 bytes
    server = build_server(
        Settings(data_dir=tmp_path / "data", max_request_bytes=1500),
        ServerSettings(allowed_roots=[root]),
        engine_factory=functools.partial(CueRag, models=models),
    )
    async with Client(server) as client:
        result = await client.call_tool("index_corpus", {"corpus": "capped", "paths": [str(root)]})
        assert result.is_error
        text = squash(result.content[0].text)  # type: ignore[union-attr]
        assert "past 1500 bytes in all" in text and "index the files in smaller requests" in text
        assert "capped" not in json.dumps(await ok(client, "list_corpora"))  # nothing was written
        report = await ok(client, "index_corpus", corpus="capped", paths=[str(root / "note-0.txt")])
        assert report["documents_added"] == 1


# ---- issue 29: paths, disks and outputs ----------------------------------------------------------


async def test_mcp_a_path_of_a_million_segments_is_refused_at_once(mcp: Mcp) -> None:
    """Issue 29, item 3: the allowed-roots check resolved it on the event loop for 282 s."""
    started = anyio.current_time()
    with anyio.fail_after(30):
        text = await refused(
            mcp.client,
            "index_corpus",
            ["`paths[0]`", "4096"],
            corpus="long",
            paths=[str(mcp.root) + "/" + "a/" * 1_000_000],
        )
    assert anyio.current_time() - started < 10, text
    many = str(mcp.root) + "/" + "a/" * 1500  # under 4,096 characters, over 1,024 segments
    await refused(mcp.client, "index_corpus", ["segments", "at most 1,024"], corpus="long", paths=[many])


async def test_mcp_the_allowed_roots_check_runs_off_the_event_loop(mcp: Mcp, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    index_tool = sys.modules["tools.index_corpus"]  # `tools.index_corpus` the attribute is the tool
    loop_thread = threading.get_ident()
    threads: list[int] = []
    real = index_tool.check_allowed

    def spy(path: str, roots: list[Path], *, walked: bool = False) -> Path:
        threads.append(threading.get_ident())
        return real(path, roots, walked=walked)

    monkeypatch.setattr(index_tool, "check_allowed", spy)
    await fails(mcp.client, "index_corpus", corpus="spy", paths=["/etc/passwd"])
    assert threads and loop_thread not in threads


async def test_mcp_a_name_over_255_bytes_is_refused_clearly_and_not_logged_whole(
    mcp: Mcp, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 29, item 8: a bare tool error, and the full path in the log."""
    name = "n" * 300
    path = f"{mcp.root}/{name}/x.md"
    text = await refused(
        mcp.client, "index_corpus", ["name of 300 bytes", "at most 255 bytes"], corpus="names", paths=[path]
    )
    assert name not in text
    assert name not in caplog.text


def test_resource_links_are_left_out_for_ids_the_sdk_would_refuse() -> None:
    """Issue 29, item 8: ids such as `C:notes.md` or `a\\..\\..\\b` got links the SDK refused."""
    from tools.resources import linkable

    for doc_id in ("C:notes.md", "a\\..\\..\\b", "c:\\x", "..\\b", "a/../b", "/abs", "x\x00"):
        assert not linkable(doc_id), doc_id
    for doc_id in ("notes/a.md", "oslo", "a..b/c.md", "C-notes.md"):
        assert linkable(doc_id), doc_id


async def test_mcp_link_entities_is_bounded_at_its_maxima(mcp: Mcp) -> None:
    """Issue 29, item 7: at its maxima link_entities returned 614 KB."""
    cities = "Oslo Bergen Paris London Tokyo Berlin Madrid Rome Vienna Prague Warsaw Lisbon Dublin Athens Cairo"
    cities += (
        " Lagos Nairobi Lima Quito Havana Boston Chicago Denver Seattle Toronto Montreal Sydney Perth Delhi Mumbai"
    )
    query = " ".join(f"{city} is a city." for city in cities.split())  # 30 entities for NER
    result = await ok(mcp.client, "link_entities", corpus=BASE, query=query, k=50)
    assert len(json.dumps(result)) < 100_000
    assert len(result["mentions"]) <= 20 and "entities; the first 20 are linked" in (result["note"] or "")


def test_disk_filling_during_the_chunk_writes_stops_the_run_before_the_next_batch(
    models: Models, tmp_path: Path
) -> None:
    """Issue 29, item 5: the free-space check ran once before the chunk batches, not before each."""
    from cuerag.errors import StorageFullError
    from cuerag.graph.schema import CHUNKS, collection_name

    disk = FillingDisk()
    engine = CueRag(Settings(data_dir=tmp_path / "data", write_batch=16), models=models, free_bytes=disk)
    try:
        engine.index_documents(BASE, [make_document(d["title"], d["text"], d["id"]) for d in BASE_DOCS])
        chunk_writes = 0
        real = engine.store.upsert

        def upsert(name: str, points: Any) -> None:
            nonlocal chunk_writes
            real(name, points)
            if name == collection_name(BASE, CHUNKS):
                chunk_writes += 1
                disk.readings_left = 0  # another program fills the disk after the first chunk batch

        engine.store.upsert = upsert  # type: ignore[method-assign]
        docs = [make_document(f"Halt {n}", f"Halt {n} is a railway stop on line {n}.", f"halt-{n}") for n in range(60)]
        with pytest.raises(StorageFullError, match=r"10\.0 MB free"):
            engine.index_documents(BASE, docs)
        assert chunk_writes == 1  # stopped before the second chunk batch
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (OSError(28, "No space left on device"), ["the disk is full", "free space", "a rerun completes"]),
        (RuntimeError("Service internal error: Read-only file system (os error 30)"), ["cannot be written", "remount"]),
    ],
)
async def test_mcp_a_store_that_fails_for_its_disk_is_a_clean_refusal(
    models: Models, tmp_path: Path, error: Exception, expected: list[str]
) -> None:
    """Issue 29, item 5: the store's ENOSPC / EROFS reached the client as a bare error, and a failed
    first run left an empty corpus listed."""
    from cuerag.store.edge_store import EdgeStore

    calls = 0
    real = EdgeStore.upsert.__wrapped__  # type: ignore[attr-defined]

    def failing(self: Any, name: str, points: Any) -> None:
        nonlocal calls
        calls += 1
        if name.endswith("--chunks"):
            raise error
        real(self, name, points)

    patch = pytest.MonkeyPatch()
    from cuerag.store import edge_store

    patch.setattr(EdgeStore, "upsert", edge_store._named_errors("write to collection")(failing))
    try:
        async with Client(own_server(models, tmp_path / "data")) as client:
            text = await fails(client, "index_corpus", corpus="c", documents=BASE_DOCS)
            assert [e for e in expected if e not in text] == [], text
            assert (await ok(client, "list_corpora"))["corpora"] == []  # no empty corpus left
    finally:
        patch.undo()


def test_a_read_only_filesystem_is_refused_before_any_write(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from cuerag.errors import StorageUnwritableError
    from cuerag.store import diskspace

    real = os.statvfs

    class ReadOnly:
        def __init__(self, info: os.statvfs_result) -> None:
            self._info = info
            self.f_flag = info.f_flag | os.ST_RDONLY

        def __getattr__(self, name: str) -> Any:
            return getattr(self._info, name)

    monkeypatch.setattr(diskspace.os, "statvfs", lambda path: ReadOnly(real(path)))
    with pytest.raises(StorageUnwritableError, match="mounted read-only"):
        diskspace.disk_free(tmp_path)
