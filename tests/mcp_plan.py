"""One plan of MCP calls that covers the whole server (every tool, the resources listed, the template
read, the prompt, the completions), run by clients nobody here wrote (tests/server/test_foreign_clients.py:
the MCP Inspector CLI and the TypeScript SDK's client, both from npm), and the checks of what each
step answered. A step's parameter {"$ref": "N.path"} stands for a value of step N's result (the job
id index_corpus returned, a chunk id q_iter found): the TypeScript driver and the Inspector runner
resolve it the same way (`resolve`)."""

from __future__ import annotations

from typing import Any

CORPUS = "sample"
TOY = "When did the 1979-80 European Cup winner win the FA Cup?"
DOC_ID = "nottingham-forest-fa-cup"
TEMPLATE = "cuerag://{corpus}/documents/{+doc_id}"
THEME_TEMPLATE = "cuerag://{corpus}/themes/{theme_id}"
# An id no job has (jobs are 12 hex digits): what cancel_job says of it is the check where no job
# can outlive the call that started it (the Inspector over stdio starts a server per call).
NO_JOB = "000000000000"
NOTE = {"id": "note-1", "title": "Lighthouse", "text": "The Bell Rock Lighthouse was built by Robert Stevenson."}

Step = dict[str, Any]


def _tool(name: str, **arguments: Any) -> Step:
    return {"method": "tools/call", "params": {"name": name, "arguments": arguments}}


def plan(*, one_session: bool, completions: bool) -> list[Step]:
    """The steps, in order. `one_session`: all of them reach one server (a job started by one call
    can be cancelled by the next); `completions`: the client can ask for them."""
    steps: list[Step] = [
        {"method": "tools/list"},
        _tool("q_iter", corpus=CORPUS, query=TOY),
        _tool("dense_search", corpus=CORPUS, query=TOY),
        _tool("search_units", corpus=CORPUS, query=TOY),
        _tool("link_entities", corpus=CORPUS, query=TOY),
        _tool("expand_entity", corpus=CORPUS, entity="Nottingham Forest", query=TOY),
        _tool("get_chunks", corpus=CORPUS, ids=[{"$ref": "1.structuredContent.chunks.0.chunk_id"}]),
        _tool("get_units", corpus=CORPUS, ids=[{"$ref": "3.structuredContent.units.0.unit_id"}]),
        _tool("read_document", corpus=CORPUS, doc_id=DOC_ID),
        _tool("list_corpora"),
        _tool("list_documents", corpus=CORPUS),
        _tool("themes", corpus=CORPUS),
        _tool("global_search", corpus=CORPUS, query=TOY),
        _tool("index_corpus", corpus="notes", documents=[NOTE]),
        _tool("delete_documents", corpus="notes", doc_ids=[NOTE["id"]]),
    ]
    if one_session:
        job = len(steps)
        steps += [
            _tool("index_corpus", corpus="jobs", documents=[NOTE], background=True),
            _tool("cancel_job", job_id={"$ref": f"{job}.structuredContent.job_id"}),
            _tool("job_status", job_id={"$ref": f"{job}.structuredContent.job_id"}, wait_s=60),
        ]
    else:
        steps += [_tool("job_status"), _tool("cancel_job", job_id=NO_JOB)]
    steps += [
        {"method": "resources/list"},
        {"method": "resources/templates/list"},
        {"method": "resources/read", "params": {"uri": f"cuerag://{CORPUS}/documents/{DOC_ID}"}},
        {"method": "resources/read", "params": {"uri": "config://server"}},
        {"method": "prompts/list"},
        {"method": "prompts/get", "params": {"name": "research", "arguments": {"corpus": CORPUS, "question": TOY}}},
    ]
    if completions:
        document = {"type": "ref/resource", "uri": TEMPLATE}
        steps += [
            {
                "method": "completion/complete",
                "params": {"ref": document, "argument": {"name": "corpus", "value": "sa"}},
            },
            {
                "method": "completion/complete",
                "params": {
                    "ref": document,
                    "argument": {"name": "doc_id", "value": "nott"},
                    "context": {"arguments": {"corpus": CORPUS}},
                },
            },
            {
                "method": "completion/complete",
                "params": {
                    "ref": {"type": "ref/prompt", "name": "research"},
                    "argument": {"name": "corpus", "value": ""},
                },
            },
        ]
    return steps


def resolve(value: Any, results: list[Any]) -> Any:
    """`value` with each {"$ref": "N.path"} replaced by that value of results[N]."""
    if isinstance(value, list):
        return [resolve(v, results) for v in value]
    if isinstance(value, dict):
        if isinstance(value.get("$ref"), str):
            index, *path = value["$ref"].split(".")
            node = results[int(index)]
            for key in path:
                node = node[int(key)] if isinstance(node, list) else node[key]
            return node
        return {k: resolve(v, results) for k, v in value.items()}
    return value


def tool_names(listed: dict[str, Any]) -> set[str]:
    return {t["name"] for t in listed["tools"]}


def check(step: Step, result: dict[str, Any]) -> None:
    """What a step's result must hold: every call succeeds and says what it was asked (the one
    deliberate error, an unknown job, says so), in the protocol's own shapes."""
    method, params = step["method"], step.get("params", {})
    label = f"{method} {params.get('name', params.get('uri', ''))}"
    if method == "tools/call":
        name, arguments = params["name"], params["arguments"]
        text = "\n".join(c.get("text", "") for c in result["content"] if c["type"] == "text")
        if name == "cancel_job" and arguments["job_id"] == NO_JOB:
            assert result.get("isError") and NO_JOB in text, (label, text)
            return
        assert not result.get("isError"), (label, text)
        structured = result["structuredContent"]
        if name in {"q_iter", "dense_search"}:
            assert DOC_ID in [h["doc_id"] for h in structured["chunks"]], label
            assert any(c["type"] == "resource_link" for c in result["content"]), label
        elif name == "read_document":
            assert "FA Cup" in structured["text"], label
        elif name == "list_corpora":
            assert CORPUS in [c["name"] for c in structured["corpora"]], label
        elif name == "index_corpus" and not arguments.get("background"):
            assert structured["documents_added"] == 1, label
        elif name == "delete_documents":
            assert structured["documents_deleted"] == [NOTE["id"]], label
        elif name == "job_status" and "job_id" in arguments:
            assert structured["state"] in {"done", "cancelled"}, (label, structured)
        elif name in {"get_chunks", "get_units"}:
            assert structured["chunks" if name == "get_chunks" else "units"], label
        return
    if method == "tools/list":
        assert {"q_iter", "index_corpus", "cancel_job"} <= tool_names(result), label
    elif method == "resources/list":
        assert "config://server" in [r["uri"] for r in result["resources"]], label
    elif method == "resources/templates/list":
        assert sorted(t["uriTemplate"] for t in result["resourceTemplates"]) == [TEMPLATE, THEME_TEMPLATE], label
    elif method == "resources/read":
        text = result["contents"][0]["text"]
        assert ("FA Cup" in text) if params["uri"].startswith("cuerag:") else CORPUS in text, label
    elif method == "prompts/list":
        assert "research" in [p["name"] for p in result["prompts"]], label
    elif method == "prompts/get":
        assert TOY in result["messages"][0]["content"]["text"], label
    elif method == "completion/complete":
        values = result["completion"]["values"]
        assert (DOC_ID in values) if params["argument"]["name"] == "doc_id" else CORPUS in values, (label, values)


__all__ = ["check", "plan", "resolve", "tool_names"]
