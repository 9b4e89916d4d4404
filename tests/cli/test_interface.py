"""What a person and an agent see: a CLI that answers without loading models, global options
wherever they are typed, help in whole sentences; an MCP server that speaks the current protocol
and the previous one, lists its tools in under 11 KB (goal 8 KB) with titles and annotations, returns compact
results whose every chunk says why it is there (in titles, never ids), and turns bad arguments
into one line that says what to change."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import typer
from conftest import SAMPLE, SAMPLE_CORPUS, server_env
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_types.version import LATEST_HANDSHAKE_VERSION, LATEST_PROTOCOL_VERSION
from pydantic import TypeAdapter
from typer.testing import CliRunner

import cuerag.cli.app
import cuerag.cli.context
from cuerag import CueRag, Settings
from cuerag.config import MAX_QUERY_CHARS, QIterParams
from cuerag.ingest.documents import JSON_SUFFIXES, TEXT_SUFFIXES
from cuerag.models.loading import Models
from server.app import build_server
from server.config import ServerSettings
from tools.common import Query

TOY = "When did the 1979-80 European Cup winner win the FA Cup?"
ROOT = Path(__file__).parent.parent.parent
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
HEAVY = ("torch", "sentence_transformers", "transformers", "spacy")


@pytest.fixture(scope="module")
def data_dir(models: Models, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder holding the sample corpus, its engine closed (so a CLI process can open it)."""
    data = tmp_path_factory.mktemp("interface-data")
    engine = CueRag(Settings(data_dir=data), models=models)
    engine.index_paths(SAMPLE, [SAMPLE_CORPUS])
    engine.close()
    return data


# ---- the CLI ------------------------------------------------------------------------------------

_RUN_CLI = f"""
import sys
from cuerag.cli.app import main
sys.argv = ["cuerag", *sys.argv[1:]]
try:
    main()
    code = 0
except SystemExit as exc:
    code = exc.code
print("HEAVY", sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)
sys.exit(code)
"""


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`cuerag ARGS` in a fresh interpreter that reports which heavy modules it imported."""
    return subprocess.run(
        [sys.executable, "-c", _RUN_CLI, *args], cwd=ROOT, env=server_env(), capture_output=True, text=True, timeout=300
    )


def test_cli_commands_that_need_no_model_load_none(data_dir: Path) -> None:
    d = str(data_dir)
    listed = run_cli("corpora", "--json", "--data-dir", d)  # the global option after the command
    assert listed.returncode == 0, listed.stderr
    (info,) = json.loads(listed.stdout)
    assert info["name"] == SAMPLE and (info["documents"], info["chunks"]) == (15, 15)
    stats = run_cli("stats", f"--data-dir={d}", "-c", SAMPLE)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["chunk_unit_edges"] > 15
    deleted = run_cli("delete", "no-such-doc", "-c", SAMPLE, "--data-dir", d)
    assert deleted.returncode == 0 and "not found: no-such-doc" in deleted.stdout, deleted.stderr
    failures = [
        run_cli("query", "Who?", "-c", "nope", "--data-dir", d),
        run_cli("stats", "-c", "nope", "--data-dir", d),
        run_cli("drop", "-c", "nope", "--yes", "--data-dir", d),
        run_cli("index", str(ROOT / "no-such-file.md"), "-c", "new", "--data-dir", d),
    ]
    for failed in failures:
        assert failed.returncode == 1, failed.stderr
        assert "error:" in failed.stderr
    for run in [listed, stats, deleted, *failures]:
        assert "HEAVY []" in run.stderr, run.stderr  # neither torch nor a model was imported
        assert "Loading weights" not in run.stderr


def test_cli_global_options_before_or_after_the_command(data_dir: Path, models: Models) -> None:
    runner = CliRunner()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cuerag.cli.context, "make_own_engine", functools.partial(CueRag, models=models))
        before = runner.invoke(cuerag.cli.app.app, ["--data-dir", str(data_dir), "corpora", "--json"])
        after = runner.invoke(cuerag.cli.app.app, ["corpora", "--json", "--data-dir", str(data_dir), "-v"])
        # A subcommand's own option keeps its place; what follows `--` is an argument.
        dashed = runner.invoke(cuerag.cli.app.app, ["delete", "-c", SAMPLE, "--data-dir", str(data_dir), "--", "-v"])
    assert before.exit_code == after.exit_code == 0, after.output
    assert json.loads(before.stdout) == json.loads(after.stdout)
    assert dashed.exit_code == 0 and "not found: -v" in dashed.stdout, dashed.output


def test_cli_help_is_whole_sentences_and_lists_every_indexed_suffix() -> None:
    group = typer.main.get_command(cuerag.cli.app.app)
    assert isinstance(group, typer.core.TyperGroup)
    for name, command in group.commands.items():
        summary = (command.help or "").split("\n\n")[0].strip()
        # The command list shows the first paragraph as written: one sentence on one line.
        assert "\n" not in summary and summary.endswith("."), (name, summary)
    shown = CliRunner().invoke(cuerag.cli.app.app, ["index", "--help"], env={"COLUMNS": "200"}).output
    assert all(suffix in shown for suffix in TEXT_SUFFIXES | JSON_SUFFIXES), shown


def test_cli_query_help_shows_each_q_iter_default_and_range() -> None:
    shown = CliRunner().invoke(cuerag.cli.app.app, ["query", "--help"], env={"COLUMNS": "250"}).output
    for name in ("k", "depth", "beam", "top_n", "title_links"):
        field = QIterParams.model_fields[name]
        bounds = {type(m).__name__: m for m in field.metadata}
        assert f"(default {field.default}; {bounds['Ge'].ge}..{bounds['Le'].le})" in shown, (name, shown)
    assert "(default True)" in shown, shown


def test_cli_query_says_why_each_chunk_is_here(data_dir: Path, models: Models) -> None:
    runner = CliRunner()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cuerag.cli.context, "make_own_engine", functools.partial(CueRag, models=models))
        as_json = runner.invoke(cuerag.cli.app.app, ["query", TOY, "-c", SAMPLE, "--json", "--data-dir", str(data_dir)])
        shown = runner.invoke(
            cuerag.cli.app.app, ["query", TOY, "-c", SAMPLE, "--no-trace", "--data-dir", str(data_dir)]
        )
    assert as_json.exit_code == 0 and shown.exit_code == 0, shown.output
    chunks = json.loads(as_json.stdout)["chunks"]
    assert all(h["why"]["text"] and not UUID.search(h["why"]["text"]) for h in chunks), chunks
    named = next(h for h in chunks if h["doc_id"] == "fa-cup")
    assert named["why"]["kind"] == "named_in_query" and "“FA Cup”" in named["why"]["text"]
    assert shown.stdout.count("why:") == len(chunks)


def _passages(shown: str) -> str:
    """The passage column of `cuerag query`'s table read back line by line, its wrapping undone
    (runs of spaces made one)."""
    cells = [line.split("│")[-2] for line in shown.splitlines() if line.count("│") >= 4]
    return " ".join(" ".join(cells).split())


def test_cli_query_chars_shows_as_much_of_each_passage_as_asked(data_dir: Path, models: Models) -> None:
    """A passage was cut at 297 characters with no way to see more: `--chars N` cuts it at N, and
    `--chars 0` shows it whole."""
    runner = CliRunner()
    args = ["query", TOY, "-c", SAMPLE, "--no-trace", "--data-dir", str(data_dir)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cuerag.cli.context, "make_own_engine", functools.partial(CueRag, models=models))
        texts = [h["text"] for h in json.loads(runner.invoke(cuerag.cli.app.app, [*args, "--json"]).stdout)["chunks"]]
        short = runner.invoke(cuerag.cli.app.app, [*args, "--chars", "60"])
        whole = runner.invoke(cuerag.cli.app.app, [*args, "--chars", "0"])
        shown = CliRunner().invoke(cuerag.cli.app.app, ["query", "--help"], env={"COLUMNS": "200"}).output
    assert short.exit_code == 0 and whole.exit_code == 0, short.output + whole.output
    one_line = [t for t in texts if "\n" not in t and len(t) > 60]
    assert one_line  # passages the checks below can find on one line, each longer than the cut
    for text in one_line:
        assert text[:59] + "…" in _passages(short.stdout) and text not in _passages(short.stdout), text
        assert text in _passages(whole.stdout), text
    assert "--chars" in shown and "0: the whole passage" in shown, shown


def test_cli_themes_and_global_search(data_dir: Path, models: Models) -> None:
    """Issue 32: `cuerag themes` lists and opens themes, refusing an unknown one; `cuerag global`
    answers by theme within its budget."""
    runner = CliRunner()
    base = ["-c", SAMPLE, "--data-dir", str(data_dir)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cuerag.cli.context, "make_own_engine", functools.partial(CueRag, models=models))
        listed = runner.invoke(cuerag.cli.app.app, ["themes", *base, "--json"])
        assert listed.exit_code == 0, listed.output
        first = json.loads(listed.stdout)["themes"][0]["theme_id"]
        opened = runner.invoke(cuerag.cli.app.app, ["themes", *base, "--theme", first])
        unknown = runner.invoke(cuerag.cli.app.app, ["themes", *base, "--theme", "L7.77"])
        found = runner.invoke(cuerag.cli.app.app, ["global", TOY, *base, "--budget", "200", "--json"])
    assert opened.exit_code == 0 and first in opened.stdout, opened.output
    assert unknown.exit_code == 1 and "no theme 'L7.77'" in unknown.output
    assert found.exit_code == 0, found.output
    result = json.loads(found.stdout)
    assert result["groups"] and result["tokens"] <= 200


def test_cli_themes_opens_a_leaf_theme_with_its_documents(data_dir: Path, models: Models) -> None:
    """A theme with no sub-themes printed its report, then an empty table: its documents instead."""
    runner = CliRunner()
    base = ["-c", SAMPLE, "--data-dir", str(data_dir)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cuerag.cli.context, "make_own_engine", functools.partial(CueRag, models=models))
        levels = json.loads(runner.invoke(cuerag.cli.app.app, ["themes", *base, "--json"]).stdout)["levels"]
        deepest = runner.invoke(cuerag.cli.app.app, ["themes", *base, "--level", str(levels - 1), "--json"])
        leaf = json.loads(deepest.stdout)["themes"][0]
        assert leaf["children"] == 0, leaf
        detail = json.loads(
            runner.invoke(cuerag.cli.app.app, ["themes", *base, "--theme", leaf["theme_id"], "--json"]).stdout
        )
        opened = runner.invoke(cuerag.cli.app.app, ["themes", *base, "--theme", leaf["theme_id"]])
    assert opened.exit_code == 0, opened.output
    assert "theme_id" not in opened.stdout and "0 of 0" not in opened.stdout, opened.stdout  # no empty table
    assert "no sub-themes" in opened.stdout, opened.stdout
    lines = opened.stdout.splitlines()
    assert detail["theme"]["documents"] and all(f"  {d}" in lines for d in detail["theme"]["documents"]), lines


def test_cli_query_to_a_pipe_draws_its_table_in_columns(data_dir: Path, models: Models) -> None:
    # CliRunner's stdout is not a terminal. The table sized itself to its widest passage (~380
    # columns in `cuerag query > file`); it is drawn in COLUMNS, else 100, its passages wrapped.
    runner = CliRunner()
    args = ["query", TOY, "-c", SAMPLE, "--no-trace", "--data-dir", str(data_dir)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cuerag.cli.context, "make_own_engine", functools.partial(CueRag, models=models))
        hits = json.loads(runner.invoke(cuerag.cli.app.app, [*args, "--json"]).stdout)["chunks"]
        narrow = runner.invoke(cuerag.cli.app.app, args, env={"COLUMNS": "80"})
        unset = runner.invoke(cuerag.cli.app.app, args, env={"COLUMNS": None})
    assert narrow.exit_code == 0 and unset.exit_code == 0, narrow.output + unset.output
    assert [h for h in hits if len(h["why"]["text"]) > 80]  # reasons wider than the table
    for shown, columns in ((narrow.stdout, 80), (unset.stdout, 100)):
        lines = shown.splitlines()
        assert max(len(line) for line in lines) == columns, lines
        for hit in hits:  # every reason whole in the passage column, only wrapped
            assert " ".join(f"why: {hit['why']['text']}".split()) in _passages(shown), hit["why"]["text"]


def test_cli_errors_name_the_commands_and_flags_typed(data_dir: Path, models: Models) -> None:
    # The engine's messages name an MCP tool or argument for an agent; the CLI's name its own.
    runner = CliRunner()
    d = ["-c", SAMPLE, "--data-dir", str(data_dir)]
    cases = [
        (["query", TOY, "--doc", "no-such-doc", *d], ["--doc", "`cuerag documents`"]),
        (["query", TOY, "--top-n", "0", *d], ["--top-n"]),
        (["query", TOY, "--prefix", "x" * 300, *d], ["invalid --prefix"]),
        (["documents", "--cursor", "not-a-cursor", *d], ["invalid --cursor"]),
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cuerag.cli.context, "make_own_engine", functools.partial(CueRag, models=models))
        for args, named in cases:
            failed = runner.invoke(cuerag.cli.app.app, args)
            assert failed.exit_code == 1, failed.output
            text = " ".join(failed.output.split())
            assert all(n in text for n in named), text
            assert not re.search(r"list_documents|doc_ids|path_prefix|top_n|next_cursor", text), text


def test_cli_query_refuses_a_question_over_the_tools_cap(data_dir: Path, models: Models) -> None:
    # One cap for a question, wherever it comes from: the MCP tools' schema and the CLI's engine call.
    runner = CliRunner()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cuerag.cli.context, "make_own_engine", functools.partial(CueRag, models=models))
        long = "Who? " * (MAX_QUERY_CHARS // 5) + "x"
        refused = runner.invoke(cuerag.cli.app.app, ["query", long, "-c", SAMPLE, "--data-dir", str(data_dir)])
    assert refused.exit_code == 1, refused.output
    assert f"{len(long)} characters long, over the {MAX_QUERY_CHARS}" in refused.output
    assert TypeAdapter(Query).json_schema()["maxLength"] == MAX_QUERY_CHARS


# ---- the MCP server ------------------------------------------------------------------------------


def _server(models: Models, data_dir: Path, **settings: Any) -> MCPServer:
    return build_server(
        Settings(data_dir=data_dir, **settings),
        ServerSettings(allowed_roots=[SAMPLE_CORPUS.parent]),
        engine_factory=functools.partial(CueRag, models=models),
    )


@pytest.fixture(scope="module")
async def client(models: Models, data_dir: Path) -> AsyncIterator[Client]:
    async with Client(_server(models, data_dir)) as connected:
        yield connected


@pytest.mark.anyio
async def test_current_protocol_and_the_previous_one(models: Models, data_dir: Path) -> None:
    server = _server(models, data_dir)
    for mode, version in (("auto", LATEST_PROTOCOL_VERSION), ("legacy", LATEST_HANDSHAKE_VERSION)):
        # "legacy" is the initialize handshake: a client that asks for the previous revision.
        async with Client(server, mode=mode) as connected:
            assert connected.protocol_version == version
            assert connected.instructions and "q_iter" in connected.instructions
            # The step-by-step tools are not listed here (no --stepwise), so the instructions leave them out.
            assert "step by step" not in connected.instructions and "expand_entity" not in connected.instructions
            result = await connected.call_tool("q_iter", {"corpus": SAMPLE, "query": TOY})
            assert not result.is_error, result.content
            assert result.structured_content is not None
            assert "nottingham-forest-fa-cup" in [h["doc_id"] for h in result.structured_content["chunks"]]
    assert LATEST_HANDSHAKE_VERSION != LATEST_PROTOCOL_VERSION


@pytest.mark.anyio
async def test_tools_list_is_small_and_every_tool_has_a_title_and_annotations(
    models: Models, data_dir: Path, client: Client
) -> None:
    listed = await client.list_tools()
    # Every tool but `answer` (it needs an LLM) and the four step-by-step ones (listed with --stepwise);
    # global_search and themes (issue 32) included.
    assert len(listed.tools) == 12
    # The budget (issue 31): 8 KB, as benchmarks/tool_result_size.py measures it (docs/mcp.md).
    assert len(listed.model_dump_json(by_alias=True, exclude_none=True).encode()) <= 8_192
    q_iter = next(t for t in listed.tools if t.name == "q_iter").input_schema["properties"]
    assert "llm_entities" not in q_iter  # this server has no LLM to honour it
    # The length guard is enforced, not listed (below); the description is what a client that never
    # shows the server's instructions tells the model (tests/tools/test_mcp_schemas.py).
    assert set(q_iter["query"]) == {"type", "description"} and q_iter["query"]["type"] == "string"
    for tool in listed.tools:
        assert tool.title and tool.annotations is not None, tool.name
        assert tool.annotations.read_only_hint is not None and tool.annotations.open_world_hint is False, tool.name
        assert "\n" not in tool.description and "  " not in tool.description, tool.name


@pytest.mark.anyio
async def test_compact_result_explains_each_chunk_and_full_adds_the_trace(client: Client) -> None:
    compact = await client.call_tool("q_iter", {"corpus": SAMPLE, "query": TOY})
    full = await client.call_tool("q_iter", {"corpus": SAMPLE, "query": TOY, "detail": "full"})
    assert compact.structured_content is not None and full.structured_content is not None
    hits = compact.structured_content["chunks"]
    assert "trace" not in compact.structured_content
    assert [h["chunk_id"] for h in hits] == [h["chunk_id"] for h in full.structured_content["chunks"]]
    assert [h["rank"] for h in hits] == [1, 2, 3, 4, 5]
    for hit in hits:
        assert hit["title"] and hit["text"] and hit["why"], hit
        assert not UUID.search(hit["why"]), hit["why"]
    walked = [h for h in hits if "path" in h]  # a hit no kept path reached has none, not an empty one
    assert walked and all(h["path"] and all(s["via"] for s in h["path"]) for h in walked)
    # A step's statement is given once: as the rank of the returned passage that holds it, or (no
    # returned passage holds it) as its text and its passage's title.
    by_rank = {h["rank"]: h for h in hits}
    full_paths = {h["chunk_id"]: h["why"]["path"] for h in full.structured_content["chunks"]}
    for hit in walked:
        for step, whole in zip(hit["path"], full_paths[hit["chunk_id"]], strict=True):
            if "passage" in step:
                held = by_rank[step["passage"]]
                assert whole["unit"] in held["text"] and whole["title"] == held["title"] and "unit" not in step
            else:
                assert step["title"] == whole["title"] and whole["unit"].startswith(step["unit"].rstrip("…"))
                assert not any(whole["unit"] in h["text"] and whole["title"] == h["title"] for h in hits)
    # The bridge of the toy question: the FA Cup passage is reached from the European Cup's winner.
    fa = next(h for h in hits if h["doc_id"] == "nottingham-forest-fa-cup")
    assert "Nottingham Forest" in [s["via"] for s in fa["path"]]
    # The text content is a readable rendering, not the JSON a second time.
    text = compact.content[0].text  # type: ignore[union-attr]
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert all(f"[{h['rank']}] {h['title']}" in text and h["why"] in text for h in hits)
    # Full keeps today's trace, and every chunk says why in words too.
    trace = full.structured_content["trace"]
    assert trace["depths"] and all(d["paths"] for d in trace["depths"])
    for h, c in zip(full.structured_content["chunks"], hits, strict=True):
        # The same sentence; compact leaves out the path's entities, listed beside it.
        through = " through " + " → ".join(step["via"] for step in h["why"]["path"])
        assert h["why"]["text"] == (
            c["why"].replace("reached it (", f"reached it{through} (") if "path" in c else c["why"]
        )
    assert len(compact.content[0].text) < len(json.dumps(full.structured_content))  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_every_kind_of_hit_says_why_in_titles(client: Client) -> None:
    # Few paths, many chunks: the walk reaches some, the titles the question names others, the
    # title links more, and the dense fill the rest.
    args = {"corpus": SAMPLE, "query": TOY, "depth": 1, "beam": 1, "k": 1, "top_n": 12, "detail": "full"}
    result = await client.call_tool("q_iter", args)
    assert result.structured_content is not None
    hits = result.structured_content["chunks"]
    kinds = {h["why"]["kind"] for h in hits}
    assert {"named_in_query", "dense_fill"} <= kinds, [(h["doc_id"], h["why"]) for h in hits]
    for hit in hits:
        why = hit["why"]
        assert why["text"] and not UUID.search(why["text"]), why
        if not hit["unit_ids"]:  # no kept path reached it: the reason is the name, the link or the fill
            assert why["kind"] in {"named_in_query", "title_link", "entity_link", "lexical_match", "dense_fill"}, hit
            assert why["path"] == [], hit
        if why["kind"] in ("title_link", "entity_link"):
            assert why["linked_from_title"] and f"“{why['linked_from_title']}”" in why["text"]
        if why["kind"] == "dense_fill":
            assert hit["source"] == "dense" and "dense fill" in why["text"]
    named = next(h for h in hits if h["why"]["kind"] == "named_in_query")
    assert f"“{named['title']}”" in named["why"]["text"]
    # A chain of title links, and chunks no kept path reached (the issue's `unit_ids: []`).
    args = {"corpus": SAMPLE, "query": "Who was the brother of Lothair II's wife?", "depth": 1, "beam": 1, "k": 1}
    chain = await client.call_tool("q_iter", {**args, "detail": "full"})
    assert chain.structured_content is not None
    by_doc = {h["doc_id"]: h for h in chain.structured_content["chunks"]}
    why = by_doc["teutberga"]["why"]
    # Lothair II's note names Teutberga's title and shares the entity with it: whichever link
    # scores higher (the entity link reads her note against the question plus "Teutberga") sets
    # the score and says so.
    assert by_doc["teutberga"]["unit_ids"] == [] and why["linked_from_title"] == "Lothair II", why
    assert why["text"] in (
        "title link: “Lothair II”, one of the best passages, names its title “Teutberga”",
        "entity link: “Lothair II”, one of the best passages, names “Teutberga”, the subject of this passage",
    )
    # The next hop, from Teutberga: her note names Hucbert's title, and shares the entity with it.
    why = by_doc["hucbert"]["why"]
    assert by_doc["hucbert"]["unit_ids"] == [] and why["linked_from_title"] == "Teutberga", why
    assert why["text"] in (
        "title link: “Teutberga”, one of the best passages, names its title “Hucbert”",
        "entity link: “Teutberga”, one of the best passages, names “Hucbert”, the subject of this passage",
    )
    dense = await client.call_tool("dense_search", {"corpus": SAMPLE, "query": TOY, "top_n": 2})
    assert dense.structured_content is not None
    assert all("embedding similarity" in h["why"] for h in dense.structured_content["chunks"])


@pytest.mark.anyio
async def test_argument_errors_are_one_line_that_says_what_to_change(client: Client) -> None:
    cases = [
        (
            "q_iter",
            {"corpus": SAMPLE, "query": TOY, "k": 99},
            "`k`=99: should be less than or equal to 50; give an integer from 1 to 50",
        ),
        ("index_corpus", {"corpus": "x", "paths": "notes/"}, 'give a list of strings (at most 1000), e.g. ["notes/"]'),
        ("q_iter", {"corpus": SAMPLE, "query": TOY, "detail": "short"}, 'give one of "compact", "full"'),
        ("q_iter", {"corpus": SAMPLE, "query": "x" * 4001}, "give a string of 1 to 4000 characters"),
    ]
    for tool, args, expected in cases:
        result = await client.call_tool(tool, args)
        text = result.content[0].text  # type: ignore[union-attr]
        assert result.is_error and text.startswith(f"invalid arguments to {tool}: "), text
        assert expected in text and "\n" not in text and "pydantic" not in text, text
    no_llm = await client.call_tool("q_iter", {"corpus": SAMPLE, "query": TOY, "llm_entities": True})
    text = no_llm.content[0].text  # type: ignore[union-attr]
    assert no_llm.is_error and "call q_iter without it" in text and "CUERAG_" not in text, text
    outside = await client.call_tool("index_corpus", {"corpus": "x", "paths": [str(ROOT / "pyproject.toml")]})
    text = outside.content[0].text  # type: ignore[union-attr]
    assert outside.is_error and "send the text as `documents`" in text and "CUERAG_" not in text, text


# ---- the engine without models -------------------------------------------------------------------


def test_engine_lists_counts_and_deletes_without_loading_models(data_dir: Path, models: Models, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "data"
    shutil.copytree(data_dir, copy)
    with_models = CueRag(Settings(data_dir=copy), models=models)
    expected = with_models.graph(SAMPLE).sizes
    with_models.close()
    engine = CueRag(Settings(data_dir=copy))  # no models given: they would load on first use
    try:
        assert engine.corpora() == [SAMPLE]
        info = engine.info(SAMPLE)
        assert (info.documents, info.chunks, info.units, info.entities) == (
            expected["documents"],
            expected["chunks"],
            expected["units"],
            expected["entities"],
        )
        assert engine.sizes(SAMPLE) == expected
        overview = engine.global_search(SAMPLE, "What are the main topics of this corpus?")
        assert overview.overview and overview.groups  # the stored themes, read without a model
        report = engine.delete_documents(SAMPLE, ["fa-cup"])
        assert report.documents_deleted == ["fa-cup"] and report.totals["documents"] == 14
        assert engine.info(SAMPLE).documents == 14
        engine.drop_corpus(SAMPLE)
        assert engine.corpora() == []
        assert not engine.models_loaded
    finally:
        engine.close()


def test_cli_query_writes_no_library_debug_lines_or_bars(models: Models, tmp_path: Path) -> None:
    """bm25s sets its own logger to DEBUG when imported, and transformers draws a bar while it reads
    the embedder's weights; a query's stderr must carry neither."""
    engine = CueRag(Settings(data_dir=tmp_path), models=models)  # a data dir no other test holds open
    engine.index_paths(SAMPLE, [SAMPLE_CORPUS])
    engine.close()
    run = run_cli("query", "When did Nottingham Forest win the FA Cup?", "-c", SAMPLE, "--data-dir", str(tmp_path))
    assert run.returncode == 0, run.stderr
    assert "DEBUG" not in run.stderr, run.stderr
    assert "Loading weights" not in run.stderr, run.stderr
