"""Background jobs: index runs and folder watches that outlive the tool call that started them.

The server's lifespan owns one `Jobs` (in `AppState`) and the task group its jobs run in; nothing
about jobs lives at module level. A job runs its engine work on a worker thread and stops when its
`stop` event is set: the engine asks between stages and batches, and a stopped index run leaves the
corpus as a killed one would (earlier data intact, nothing of the run served; a rerun completes
it). Bounds: at most `max_running` jobs at once, one per corpus (two never write one corpus), and
the `max_kept` most recent finished ones are remembered for `job_status`, older ones forgotten.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

import anyio
import anyio.from_thread
import anyio.to_thread
from anyio.abc import TaskGroup
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

from cuerag import CueRagError, IndexReport
from cuerag.errors import Cancelled

log = logging.getLogger(__name__)

JobKind = Literal["index", "watch"]
JobState = Literal["running", "done", "failed", "cancelled"]
# What a caller is shown: a running job asked to stop says so until it stops at its next step.
ShownState = Literal["running", "cancelling", "done", "failed", "cancelled"]


class JobInfo(BaseModel):
    """What `job_status` says about a job."""

    job_id: str
    kind: JobKind
    corpus: str
    state: ShownState
    percent: float | None = None  # of the current index run or sync
    stage: str = ""  # e.g. "embed units 120/800"
    elapsed_s: float
    syncs: int | None = None  # a watch: the syncs it has finished
    error: str | None = None  # why it failed; a watch: why its last sync failed
    result: IndexReport | None = None  # an index job's report; a watch: its last sync's


@dataclass(frozen=True)
class JobLimits:
    max_running: int = 4
    max_kept: int = 32


@dataclass(eq=False)
class Job:
    """One job's state, changed only on the event loop (the worker thread reports through
    `JobHandle`). `changed` is set and replaced at every change, so a waiter wakes on each."""

    id: str
    kind: JobKind
    corpus: str
    stop: threading.Event = field(default_factory=threading.Event)
    state: JobState = "running"
    percent: float | None = None
    stage: str = ""
    syncs: int = 0
    error: str | None = None
    failure: Exception | None = None  # what made it fail, for a caller waiting within its call
    result: IndexReport | None = None
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    changed: anyio.Event = field(default_factory=anyio.Event)

    @property
    def running(self) -> bool:
        return self.state == "running"

    def touch(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    def info(self) -> JobInfo:
        end = self.finished if self.finished is not None else time.monotonic()
        return JobInfo(
            job_id=self.id,
            kind=self.kind,
            corpus=self.corpus,
            state="cancelling" if self.running and self.stop.is_set() else self.state,
            percent=self.percent,
            stage=self.stage,
            elapsed_s=round(end - self.started, 1),
            syncs=self.syncs if self.kind == "watch" else None,
            error=self.error,
            result=self.result,
        )


@dataclass(frozen=True)
class Stages:
    """The stages of a job's work in the order they finish; `concurrent` ones run beside others,
    so their reports say nothing about the stages before them."""

    order: tuple[str, ...]
    concurrent: frozenset[str] = frozenset()


class JobHandle:
    """What a job's work sees on its worker thread: the stop request, and calls that report
    progress and results back to the event loop."""

    def __init__(self, job: Job, stages: Stages) -> None:
        self._job = job
        self._stages = stages
        self._done: dict[str, float] = {}  # each stage's share done, which only grows
        self._last = -1.0

    def should_stop(self) -> bool:
        return self._job.stop.is_set()

    @property
    def stop_event(self) -> threading.Event:
        return self._job.stop

    def progress(self, stage: str, done: int, total: int) -> None:
        """The engine's (stage, done, total), as a percent over all stages that never goes back,
        at most about one report per percent."""
        order = self._stages.order
        key = stage if stage in order else order[-1]
        if key not in self._stages.concurrent:
            # A stage reporting means the stages before it are over (one with nothing to do never reports).
            for earlier in order[: order.index(key)]:
                self._done[earlier] = 1.0
        self._done[key] = max(self._done.get(key, 0.0), done / total if total else 1.0)
        overall = 100.0 * sum(self._done.values()) / len(order)
        if overall - self._last < 1.0 and done < total:
            return
        self._last = overall
        anyio.from_thread.run_sync(self._set_progress, round(overall, 1), f"{stage} {done}/{total}")

    def _set_progress(self, percent: float, stage: str) -> None:
        # NER reports from its own thread beside the embedding: two reports computed in one order
        # may reach the event loop in the other, and the later, lower one would take the percent
        # back (a finished run ended at 94 %).
        if self._job.percent is not None and percent < self._job.percent:
            return
        self._job.percent, self._job.stage = percent, stage
        self._job.touch()

    def synced(self, report: IndexReport) -> None:
        """A watch finished a sync."""
        self._last = -1.0
        self._done.clear()
        anyio.from_thread.run_sync(self._set_synced, report)

    def _set_synced(self, report: IndexReport) -> None:
        job = self._job
        job.syncs += 1
        # Between syncs there is no progress to show; the next sync's starts from 0 again.
        job.result, job.error, job.percent, job.stage = report, None, None, "watching"
        job.touch()

    def sync_failed(self, exc: CueRagError) -> None:
        anyio.from_thread.run_sync(self._set_error, str(exc))

    def _set_error(self, message: str) -> None:
        self._job.error = message
        self._job.touch()


Work = Callable[[JobHandle], IndexReport] | Callable[[JobHandle], None]


class Jobs:
    """The server's jobs: started into the lifespan's task group, looked up by id, cancelled."""

    def __init__(self, task_group: TaskGroup, limits: JobLimits) -> None:
        self._tg = task_group
        self._limits = limits
        self._jobs: dict[str, Job] = {}  # in start order

    def start(self, kind: JobKind, corpus: str, work: Work, stages: Stages) -> Job:
        """Start `work` on a worker thread, or refuse (a job already on the corpus, too many)."""
        self.refuse_if_busy(corpus)
        running = [j for j in self._jobs.values() if j.running]
        if len(running) >= self._limits.max_running:
            raise ToolError(
                f"{len(running)} jobs are running, the most this server runs at once "
                f"({', '.join(j.id for j in running)}): wait for one to end or stop one with cancel_job"
            )
        job = Job(id=secrets.token_hex(6), kind=kind, corpus=corpus)
        self._jobs[job.id] = job
        self._forget_old()
        self._tg.start_soon(self._run, job, work, JobHandle(job, stages), name=f"job {job.id}")
        log.info("job %s started: %s %s", job.id, kind, corpus)
        return job

    async def _run(self, job: Job, work: Work, handle: JobHandle) -> None:
        try:
            result = await anyio.to_thread.run_sync(work, handle)
            if result is not None:
                job.result = result
            # A watch returns nothing when stopped; an index run that finished is done, stop or not.
            job.state = "cancelled" if result is None and job.stop.is_set() else "done"
        except Cancelled:
            job.state = "cancelled"
        except CueRagError as exc:
            job.state, job.error, job.failure = "failed", str(exc), exc
        except Exception as exc:  # a bug: the job fails, the server goes on
            log.exception("job %s failed", job.id)
            job.state, job.error, job.failure = "failed", f"internal error: {type(exc).__name__}: {exc}", exc
        finally:
            job.finished = time.monotonic()
            log.info("job %s ended: %s", job.id, job.state)
            job.touch()
            self._forget_old()

    def _forget_old(self) -> None:
        finished = [j for j in self._jobs.values() if not j.running]
        for job in finished[: max(0, len(finished) - self._limits.max_kept)]:
            del self._jobs[job.id]

    def refuse_if_busy(self, corpus: str, *, exists: bool = True, watch_ok: bool = False) -> None:
        """Refuse a write to a corpus a job is writing, naming the job. `exists=False`: the job is
        the corpus's first run, which shows nothing of it until it ends (not an unknown corpus).
        `watch_ok`: a watch does not refuse (it writes only during a sync, and the engine's writer
        lock refuses a write that meets one)."""
        busy = next((j for j in self._jobs.values() if self._holds(j, corpus, watch_ok)), None)
        if busy is None:
            return
        if busy.kind == "watch":  # a watch never ends by itself: waiting for it would be forever
            raise ToolError(
                f"corpus {corpus!r} is kept in step with its folders by watch job {busy.id}: stop it "
                f"(cancel_job job_id={busy.id!r}), then call again"
            )
        what = "being written by another index run" if exists else "being created by an index run, empty until it ends"
        raise ToolError(
            f"corpus {corpus!r} is {what} (job {busy.id}, {busy.kind}): wait for it "
            f"(job_status job_id={busy.id!r} wait_s=60) or stop it (cancel_job), then call again"
        )

    @staticmethod
    def _holds(job: Job, corpus: str, watch_ok: bool) -> bool:
        return job.running and job.corpus == corpus and not (watch_ok and job.kind == "watch")

    def busy(self, corpus: str, *, watch_ok: bool = False) -> bool:
        return any(self._holds(j, corpus, watch_ok) for j in self._jobs.values())

    def get(self, job_id: str) -> Job:
        job = self._jobs.get(job_id)
        if job is None:
            raise ToolError(
                f"no job {job_id!r}: it never existed or ended long ago (the server keeps the last "
                f"{self._limits.max_kept} finished jobs); call job_status without job_id to list them"
            )
        return job

    def all(self) -> list[Job]:
        return list(self._jobs.values())

    def stop_all(self) -> None:
        """At shutdown: every job stops at its next step, so the task group can end."""
        for job in self._jobs.values():
            job.stop.set()


Report = Callable[[float, float, str], Awaitable[None]]
"""A progress notification: (progress, total, message), as `Context.report_progress`."""


async def wait_for(job: Job, timeout_s: float, report: Report | None = None) -> None:
    """Wait until the job ends or `timeout_s` passes, sending `report` (the waiting call's progress
    notification) each time the job's percent rises: a client sees its progress climb, once per
    step, up to the last step reached (100 for a finished run) even when the job ends between two
    wake-ups. A watch's percent starts again at each sync."""
    sent = (-1, -1.0)
    with anyio.move_on_after(timeout_s):
        while True:
            changed = job.changed
            if report is not None and job.percent is not None and (job.syncs, job.percent) > sent:
                sent = (job.syncs, job.percent)
                await report(job.percent, 100.0, job.stage)
            if not job.running:
                return
            await changed.wait()
