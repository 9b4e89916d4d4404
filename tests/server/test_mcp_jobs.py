"""Background jobs through a real MCP client: `index_corpus(background=true)` returns a job at once,
`job_status` polls it to completion (progress notified while it waits), `cancel_job` stops it (the corpus is
left as before, and a rerun brings it to the state of an uninterrupted run), refuses a second job
on a busy corpus and a job past the server's cap, forgets old jobs past its bound; and a folder
watch started with `watch=true` syncs changes until it is stopped."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import SAMPLE_CORPUS, call, call_error
from mcp import Client
from mcp.server.mcpserver import MCPServer

from cuerag import CueRag, Settings
from cuerag.graph.schema import KINDS, collection_name
from cuerag.models.loading import Models
from server.app import build_server
from server.config import ServerSettings

pytestmark = pytest.mark.anyio

# Enough documents that a run is still going when the cancel arrives: the engine checks for a stop
# between stages and batches, so it stops well before the end.
RAILWAY = [
    {"id": f"halt-{n}", "text": f"Halt {n} is a railway stop on line {n % 40} near the village of Elm {n}."}
    for n in range(800)
]
WAIT_S = 60  # job_status's longest wait; loops below call it again until the job ends


def make_server(models: Models, data: Path, roots: list[Path], engines: list[CueRag], **server: Any) -> MCPServer:
    def factory(settings: Settings) -> CueRag:
        engines.append(CueRag(settings, models=models))
        return engines[-1]

    return build_server(Settings(data_dir=data), ServerSettings(allowed_roots=roots, **server), engine_factory=factory)


@pytest.fixture
async def client(models: Models, tmp_path: Path) -> AsyncIterator[tuple[Client, CueRag, Path]]:
    folder = tmp_path / "notes"
    folder.mkdir()
    engines: list[CueRag] = []
    server = make_server(models, tmp_path / "data", [SAMPLE_CORPUS.parent, folder], engines)
    async with Client(server) as c:
        yield c, engines[0], folder


async def until(client: Client, job_id: str, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Poll job_status until `done` holds (a bound against hanging, not a speed check)."""
    with anyio.fail_after(600):
        while not done(info := await call(client, "job_status", job_id=job_id)):
            await anyio.sleep(0.05)
    return info


async def ended(client: Client, job_id: str) -> dict[str, Any]:
    """Wait for the job's end through job_status's own wait."""
    info = await call(client, "job_status", job_id=job_id, wait_s=WAIT_S)
    while info["state"] in {"running", "cancelling"}:
        info = await call(client, "job_status", job_id=job_id, wait_s=WAIT_S)
    return info


async def stop(client: Client, job_id: str) -> dict[str, Any]:
    """Stop a job with cancel_job, then wait for its end once, as job_status's cancel=true did
    with wait_s before stopping became a tool of its own."""
    asked = await call(client, "cancel_job", job_id=job_id)
    assert asked["state"] != "running", asked  # "cancelling" until its next step, or already ended
    return await call(client, "job_status", job_id=job_id, wait_s=WAIT_S)


def writing(info: dict[str, Any]) -> bool:
    """Past splitting, or over."""
    return info["state"] != "running" or info["stage"].startswith(("ner", "embed"))


def synced(n: int) -> Callable[[dict[str, Any]], bool]:
    return lambda info: (info["syncs"] or 0) >= n


def sizes(engine: CueRag, corpus: str) -> dict[str, int]:
    """The graph's sizes, checked against what the store holds (no orphan left by a stopped run)."""
    g = engine.graph(corpus)
    stored = {k: engine.store.count(collection_name(corpus, k)) for k in KINDS}
    assert stored == {"chunks": len(g.chunk_ids), "units": len(g.unit_ids), "entities": len(g.entity_ids)}
    return g.sizes


async def test_background_index_returns_a_job_and_polls_to_completion(
    client: tuple[Client, CueRag, Path],
) -> None:
    c, _, _ = client
    started = await call(c, "index_corpus", corpus="sample", paths=[str(SAMPLE_CORPUS)], background=True)
    assert started["state"] == "running" and started["kind"] == "index" and started["corpus"] == "sample"
    progress: list[float] = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append(p)

    info: dict[str, Any] = started
    while info["state"] in {"running", "cancelling"}:
        result = await c.call_tool(
            "job_status", {"job_id": started["job_id"], "wait_s": WAIT_S}, progress_callback=on_progress
        )
        assert result.structured_content is not None
        info = result.structured_content
    assert info["state"] == "done", info
    assert info["result"]["documents_added"] == 15 and info["percent"] == 100.0
    assert progress and progress == sorted(set(progress)) and progress[-1] == 100.0  # climbing to the end
    listed = (await call(c, "job_status"))["jobs"]
    assert [(j["job_id"], j["state"]) for j in listed] == [(started["job_id"], "done")]
    assert listed[0]["result"] is None  # the list is a summary; the report is one call away
    hits = await call(c, "q_iter", corpus="sample", query="Who won the FA Cup?")
    assert hits["chunks"]


async def test_cancel_stops_the_job_and_a_rerun_completes_the_corpus(client: tuple[Client, CueRag, Path]) -> None:
    c, engine, _ = client
    job = await call(c, "index_corpus", corpus="rail", documents=RAILWAY, background=True)
    # Past splitting: the run is writing when it is told to stop.
    await until(c, job["job_id"], writing)
    asked = await call(c, "cancel_job", job_id=job["job_id"])
    assert asked["state"] in {"cancelling", "cancelled"}, asked  # never "running" once asked to stop
    info = await ended(c, job["job_id"])
    assert info["state"] == "cancelled", info
    assert "rail" not in {x["name"] for x in (await call(c, "list_corpora"))["corpora"]}  # a first run left nothing

    # A first run into a corpus that exists, stopped: the corpus stays as it was.
    await call(c, "index_corpus", corpus="rail", documents=RAILWAY[:10])
    before = sizes(engine, "rail")
    job = await call(c, "index_corpus", corpus="rail", documents=RAILWAY, background=True)
    await until(c, job["job_id"], writing)
    await call(c, "cancel_job", job_id=job["job_id"])
    assert (await ended(c, job["job_id"]))["state"] == "cancelled"
    assert sizes(engine, "rail") == before

    # The rerun brings it where one uninterrupted run brings a fresh corpus.
    rerun = await call(c, "index_corpus", corpus="rail", documents=RAILWAY)
    assert rerun["documents_unchanged"] == 10 and rerun["documents_added"] == len(RAILWAY) - 10
    await call(c, "index_corpus", corpus="straight", documents=RAILWAY)
    assert sizes(engine, "rail") == sizes(engine, "straight")
    rail, straight = engine.graph("rail"), engine.graph("straight")
    assert sorted(rail.chunk_texts) == sorted(straight.chunk_texts)
    assert sorted(rail.unit_texts) == sorted(straight.unit_texts)
    assert sorted(rail.entity_names) == sorted(straight.entity_names)


async def test_a_busy_corpus_and_the_cap_refuse_a_second_job(models: Models, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Elm Halt\n\nElm Halt is a railway stop near the village of Elm.\n")
    engines: list[CueRag] = []
    server = make_server(models, tmp_path / "data", [folder], engines, max_jobs=1, kept_jobs=1)
    async with Client(server) as c:
        watch = await call(c, "index_corpus", corpus="notes", paths=[str(folder)], watch=True)
        assert watch["kind"] == "watch" and watch["state"] == "running"

        # The same corpus: refused while the watch runs, whatever the call.
        busy = await call_error(c, "index_corpus", corpus="notes", documents=[{"text": "More."}])
        # A watch never ends by itself: the advice is to stop it, never to wait for it.
        assert f"kept in step with its folders by watch job {watch['job_id']}" in busy, busy
        assert f"cancel_job job_id={watch['job_id']!r}" in busy and "wait" not in busy
        # Another corpus: refused too, past the cap of one job at a time.
        capped = await call_error(c, "index_corpus", corpus="other", documents=[{"text": "More."}], background=True)
        assert "1 jobs are running, the most this server runs at once" in capped, capped

        stopped = await stop(c, watch["job_id"])
        assert stopped["state"] == "cancelled", stopped

        # With the watch over, the other corpus may be written; and only one finished job is kept.
        done = await call(c, "index_corpus", corpus="other", documents=[{"text": "More."}], background=True)
        assert (await ended(c, done["job_id"]))["state"] == "done"
        assert [j["job_id"] for j in (await call(c, "job_status"))["jobs"]] == [done["job_id"]]
        gone = await call_error(c, "job_status", job_id=watch["job_id"])
        assert "no job" in gone and "keeps the last 1 finished" in gone, gone


async def test_job_status_refuses_what_it_cannot_do(client: tuple[Client, CueRag, Path]) -> None:
    c, _, folder = client
    assert "no job 'nope'" in await call_error(c, "job_status", job_id="nope")
    assert "give `job_id` to wait for a job" in await call_error(c, "job_status", wait_s=1)
    # Stopping is cancel_job's: job_status is read-only, and says which arguments it takes.
    assert "unknown argument `cancel`" in await call_error(c, "job_status", job_id="x", cancel=True)
    assert "no job 'nope'" in await call_error(c, "cancel_job", job_id="nope")
    too_long = await call_error(c, "job_status", job_id="x", wait_s=61)
    assert "wait_s" in too_long and "from 0 to 60" in too_long, too_long
    # A watch keeps one folder: not a file, not inline documents.
    one = await call_error(c, "index_corpus", corpus="w", paths=[str(SAMPLE_CORPUS)], watch=True)
    assert "one folder" in one, one
    # A failed background run is a failed job, its error the engine's.
    failed = await call(c, "index_corpus", corpus="w", paths=[str(folder)], background=True)
    info = await ended(c, failed["job_id"])
    assert info["state"] == "failed" and info["error"].startswith("no indexable files"), info


async def test_watch_job_syncs_changes_until_stopped(client: tuple[Client, CueRag, Path]) -> None:
    c, _, folder = client
    (folder / "elm.md").write_text("# Elm Halt\n\nElm Halt is a railway stop near the village of Elm.\n")
    watch = await call(c, "index_corpus", corpus="notes", paths=[str(folder)], watch=True)
    first = await until(c, watch["job_id"], synced(1))
    assert first["result"]["documents_added"] == 1 and first["state"] == "running"

    (folder / "oak.md").write_text("# Oak Halt\n\nOak Halt is a railway stop on the coast line near Oak Bay.\n")
    second = await until(c, watch["job_id"], synced(2))
    assert [Path(f["path"]).name for f in second["result"]["added"]] == ["oak.md"], second["result"]
    hits = await call(c, "dense_search", corpus="notes", query="railway stop near Oak Bay", top_n=1)
    assert hits["chunks"][0]["title"] == "Oak Halt"

    (folder / "elm.md").unlink()
    third = await until(c, watch["job_id"], synced(3))
    assert [Path(f["path"]).name for f in third["result"]["removed"]] == ["elm.md"], third["result"]

    stopped = await stop(c, watch["job_id"])
    assert stopped["state"] == "cancelled" and stopped["syncs"] == 3 and stopped["error"] is None, stopped


async def test_a_watch_with_sync_false_keeps_the_documents_of_deleted_files(
    client: tuple[Client, CueRag, Path],
) -> None:
    c, _, folder = client
    (folder / "elm.md").write_text("# Elm Halt\n\nElm Halt is a railway stop near the village of Elm.\n")
    (folder / "oak.md").write_text("# Oak Halt\n\nOak Halt is a railway stop on the coast line near Oak Bay.\n")
    watch = await call(c, "index_corpus", corpus="notes", paths=[str(folder)], watch=True, sync=False)
    first = await until(c, watch["job_id"], synced(1))
    assert first["result"]["documents_added"] == 2, first["result"]
    (folder / "elm.md").unlink()
    second = await until(c, watch["job_id"], synced(2))
    assert second["result"]["removed"] == [] and second["result"]["documents_removed"] == 0, second["result"]
    assert (await call(c, "list_documents", corpus="notes"))["total"] == 2
    stopped = await stop(c, watch["job_id"])
    assert stopped["state"] == "cancelled", stopped


async def test_deleting_from_a_corpus_a_job_is_creating_names_the_job(client: tuple[Client, CueRag, Path]) -> None:
    c, _, _ = client
    job = await call(c, "index_corpus", corpus="fresh", documents=RAILWAY, background=True)
    refused = await call_error(c, "delete_documents", corpus="fresh", doc_ids=["halt-1"])
    stopped = await stop(c, job["job_id"])
    assert stopped["state"] in {"cancelled", "done"}, stopped
    if stopped["state"] == "cancelled":  # the job was still running when the delete came
        assert f"job {job['job_id']}, index" in refused and "unknown corpus" not in refused, refused
        assert "being created" in refused or "being written" in refused, refused
    assert "unknown corpus" in await call_error(c, "delete_documents", corpus="never", doc_ids=["x"])


async def test_a_delete_between_the_syncs_of_a_watch_goes_through(client: tuple[Client, CueRag, Path]) -> None:
    """A watch writes only while it syncs, and never ends by itself: a delete between two syncs is
    not refused with advice to wait for it (found by an outside review)."""
    c, engine, folder = client
    (folder / "elm.md").write_text("# Elm Halt\n\nElm Halt is a railway stop near the village of Elm.\n")
    await call(c, "index_corpus", corpus="notes", documents=[{"id": "inline-1", "text": "Oak Bay has a pier."}])
    watch = await call(c, "index_corpus", corpus="notes", paths=[str(folder)], watch=True)
    await until(c, watch["job_id"], synced(1))
    try:
        deleted = await call(c, "delete_documents", corpus="notes", doc_ids=["inline-1"])
        assert deleted["documents_deleted"] == ["inline-1"], deleted
        assert "inline-1" not in set(engine.graph("notes").chunk_docs)
    finally:
        await stop(c, watch["job_id"])


def test_a_jobs_percent_never_goes_back_when_reports_arrive_out_of_order() -> None:
    """NER reports from its own thread: the report it computed first may reach the event loop after
    the one that finished the run; the job's percent stays at the higher one."""
    from types import SimpleNamespace

    from tools.index_corpus import _STAGES
    from tools.jobs import JobHandle

    job = SimpleNamespace(percent=None, stage="", touch=lambda: None)
    handle = JobHandle(job, _STAGES)  # type: ignore[arg-type]
    delivered: list[tuple[Callable[..., None], tuple[Any, ...]]] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(anyio.from_thread, "run_sync", lambda fn, *args: delivered.append((fn, args)))
        handle.progress("ner", 1, 2)
        for stage in _STAGES.order:
            handle.progress(stage, 1, 1)
    low, high = delivered[-2], delivered[-1]
    assert low[1][0] < high[1][0] == 100.0
    for fn, args in (*delivered[:-2], high, low):  # the last two reach the loop in the other order
        fn(*args)
    assert job.percent == 100.0
