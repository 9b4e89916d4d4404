"""Outside review: delete_documents while a folder watch runs on the corpus."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import call, call_error
from mcp import Client
from test_mcp_jobs import client, synced, until  # noqa: F401  (the fixture)

from cuerag import CueRag

pytestmark = pytest.mark.anyio


async def test_a_delete_during_an_idle_watch_is_not_told_to_wait_for_the_watch(
    client: tuple[Client, CueRag, Path],  # noqa: F811
) -> None:
    """Before 2ef0e07 a delete between two syncs of a watch went through (the engine's writer lock is
    held only during a sync). Now `delete_documents` refuses for as long as the watch job runs, and
    tells the agent to "wait for it (job_status job_id=… wait_s=60)": a watch never ends by itself,
    so an agent that follows the advice waits forever. Either let the delete through between
    syncs (the engine's own busy check covers a sync under way) or say the watch must be stopped."""
    c, _, folder = client
    (folder / "elm.md").write_text("# Elm Halt\n\nElm Halt is a railway stop near the village of Elm.\n")
    await call(c, "index_corpus", corpus="notes", documents=[{"id": "inline-1", "text": "Oak Bay has a pier."}])
    watch = await call(c, "index_corpus", corpus="notes", paths=[str(folder)], watch=True)
    await until(c, watch["job_id"], synced(1))
    try:
        deleted = await c.call_tool("delete_documents", {"corpus": "notes", "doc_ids": ["inline-1"]})
        text = deleted.content[0].text  # type: ignore[union-attr]
        assert not deleted.is_error or "wait for it" not in text, text
    finally:
        await call(c, "job_status", job_id=watch["job_id"], cancel=True, wait_s=60)
    assert call_error  # imported for symmetry with the suite's helpers
