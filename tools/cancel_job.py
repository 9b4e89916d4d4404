"""`cancel_job`: stop a background job at its next step. Not destructive: a stopped index run
leaves earlier data intact and serves nothing of the run, which a rerun completes (tools/jobs.py);
a stopped watch keeps what it synced. Idempotent: stopping a stopping or ended job changes nothing."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field

from tools.common import AppState, state_of, tool
from tools.jobs import JobInfo


@tool(
    "cancel_job",
    "Cancel a job",
    ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
    write=True,
)
async def cancel_job(
    ctx: Context[AppState],
    job_id: Annotated[str, Field(min_length=1, max_length=64, description="From index_corpus.")],
) -> JobInfo:
    """Stops an index or watch job at its next step; returns its state."""
    job = state_of(ctx).jobs.get(job_id)
    job.stop.set()
    return job.info()
