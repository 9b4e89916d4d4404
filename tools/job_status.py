"""`job_status`: a background job's progress, result or error, and waiting for it. Read-only, so a
client in a plan or ask mode polls it without asking approval each time; stopping a job is
`cancel_job`'s."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from tools.common import READ_ONLY, AppState, state_of, tool
from tools.jobs import JobInfo, wait_for

# A wait holds the call open; past a minute the agent is better told how far the job has got.
MAX_WAIT_S = 60.0


class JobList(BaseModel):
    jobs: list[JobInfo]


@tool("job_status", "Poll a job", READ_ONLY, write=True)  # jobs write; a read-only server has none
async def job_status(
    ctx: Context[AppState],
    job_id: Annotated[str, Field(max_length=64, description="None: list the jobs.")] = "",
    wait_s: Annotated[float, Field(ge=0, le=MAX_WAIT_S, description="Wait for the end this long.")] = 0,
) -> JobInfo | JobList:
    """An index job's state and result; wait_s waits."""
    jobs = state_of(ctx).jobs
    if not job_id and wait_s:
        raise ToolError("give `job_id` to wait for a job; without it, job_status lists the jobs")
    if not job_id:
        return JobList(jobs=[j.info().model_copy(update={"result": None}) for j in jobs.all()])
    job = jobs.get(job_id)
    if wait_s > 0 and job.running:
        await wait_for(job, wait_s, ctx.report_progress)
    return job.info()
