"""Theme titles and summaries written by an LLM (issue 32, item 6): optional, never required.

With an LLM configured, every community without a title from the configured model is asked
about: one whose report this run wrote (a new or changed report starts without one), or whose
earlier answer was unusable or never came. The prompt carries its extractive report, bounded
(its specific terms, top entities and representative statements, each cut to `STATEMENT_CHARS`);
the answer's title and summary are stored beside the extractive title, which stays. The calls go
through the LLM's response cache (keyed by model and prompt): an unchanged report costs nothing
however often it is asked about, and a kept community is not asked at all.

Nothing here fails an index run. An answer that does not parse, or is cut off, leaves the
extractive title (a fallback, counted); an LLM error (unreachable after its retries, a wrong key)
stops this run's asking at once, since every other call would fail the same way after the same
retries, and the communities not answered keep their extractive titles until the next run asks
again.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from cuerag.communities.reports import Report
from cuerag.errors import LLMError, LLMRefusedError
from cuerag.index.report import Progress, ShouldStop, ThemeSummariesReport
from cuerag.llm.client import LLM, LLMUsage
from cuerag.llm.json_reading import is_text, load_lenient_json, without_thinking

log = logging.getLogger(__name__)

# Written for this project; the example is invented so that a model cannot lean on memory of it.
# Two labelled lines rather than JSON: the small local models this must work with (SmolLM2-135M
# in the tests) copy a JSON template back instead of filling it, but follow the lines.
SYSTEM_PROMPT = """You name and summarise one theme of a document collection from an extract of it: \
its most specific terms, the names it mentions most, and a few representative statements.

Answer in exactly two lines:
Title: a title of 2 to 6 words
Summary: 2 to 4 sentences on what the theme's documents cover

Use only what the extract says.

Example.
Terms: lighthouse, keeper, wreck
Names: Marl Point Lighthouse, Quenby Island, Agnes Dorr
Documents: 4
Statements:
- Marl Point Lighthouse stands on the eastern cape of Quenby Island.
- Agnes Dorr kept Marl Point Lighthouse for forty years.
- The Selkie was wrecked off Quenby Island in 1893.
Answer:
Title: Lighthouses and wrecks of Quenby Island
Summary: These documents describe Marl Point Lighthouse on Quenby Island and its keepers, \
Agnes Dorr above all. They also recount the shipwrecks off the island, such as the Selkie's in 1893."""

# The example's own names: an answer holding one the extract lacks copied the example (small
# models do) and says nothing of the theme.
EXAMPLE_NAMES = ("Marl Point", "Quenby", "Agnes Dorr", "Selkie")
STATEMENT_CHARS = 300  # each representative statement is cut here: the prompt stays bounded
SUMMARY_STAGE = "theme summaries"  # the stage name progress reports
MAX_TOKENS = 256  # two to four sentences and a title take far less; more is a runaway answer
MAX_TITLE_CHARS = 100
MAX_TITLE_WORDS = 12
MIN_SUMMARY_CHARS = 20
MAX_SUMMARY_CHARS = 1500
# A labelled line: the answer's two, or one of the prompt's own that a model echoes after them
# (which ends the summary rather than joining it).
_LABEL = re.compile(
    r"^[\s*_#>-]*(?:the\s+)?(title|summary|terms|names|documents|statements|answer|example)[\s*_]*[:：]\s*(.*)$",
    re.IGNORECASE,
)
_LETTER = re.compile(r"[^\W\d_]")


@dataclass(frozen=True)
class Summary:
    title: str
    summary: str


def summary_prompt(report: Report) -> str:
    """The user message for one community: its extractive report, bounded."""
    statements = "\n".join(f"- {_cut(' '.join(e.text.split()), STATEMENT_CHARS)}" for e in report.evidence)
    return (
        f"Terms: {', '.join(report.terms) or report.title}\n"
        f"Names: {', '.join(report.entities) or '(none)'}\n"
        f"Documents: {len(report.documents)}\n"
        f"Statements:\n{statements or '(none)'}\nAnswer:"
    )


def parse_summary(answer: str) -> Summary | None:
    """The title and summary in an answer, or None when it holds no usable pair. Reads the two
    labelled lines (markdown emphasis and a leading "The" tolerated; the summary may run over
    several lines, up to the next labelled line; a label repeated is ignored), or a JSON object
    with `title` and `summary`, as larger models tend to send."""
    text = without_thinking(answer)
    fields: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if (m := _LABEL.match(line)) is not None:
            label = m.group(1).lower()
            current = [] if label in fields else fields.setdefault(label, [])  # the first of each counts
            current.append(m.group(2))
        elif current is not None and line.strip():
            current.append(line)
    title, summary = " ".join(fields.get("title", [])), " ".join(fields.get("summary", []))
    if not (title and summary):
        data = load_lenient_json(text)
        if isinstance(data, dict) and is_text(data.get("title")) and is_text(data.get("summary")):
            title, summary = str(data["title"]), str(data["summary"])
    title = " ".join(title.split()).strip(" \"'*_`.")
    summary = " ".join(summary.split()).strip(" \"'*_`")
    if not (is_text(title) and is_text(summary)):
        return None
    if not (0 < len(title) <= MAX_TITLE_CHARS and len(title.split()) <= MAX_TITLE_WORDS and _LETTER.search(title)):
        return None
    if not (MIN_SUMMARY_CHARS <= len(summary) <= MAX_SUMMARY_CHARS and _LETTER.search(summary)):
        return None
    return Summary(title=title, summary=summary)


def copies_example(summary: Summary, prompt: str) -> bool:
    """Whether the answer took names from the prompt's example that the extract does not hold."""
    said = f"{summary.title} {summary.summary}".casefold()
    return any(n.casefold() in said and n.casefold() not in prompt.casefold() for n in EXAMPLE_NAMES)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class _Answer:
    summary: Summary | None
    usage: LLMUsage
    problem: str = ""  # why there is no summary
    failed: bool = False  # the LLM itself failed: ask it nothing more this run
    asked: bool = True  # False: not asked, the LLM having failed earlier in the run
    cancelled: bool = False  # not asked: the run was cancelled


class SummaryWriter:
    """Asks the LLM about the communities that need it, `concurrency` requests at a time."""

    def __init__(self, llm: LLM, *, concurrency: int) -> None:
        self._llm = llm
        self._concurrency = concurrency
        self._given_up = threading.Event()

    @property
    def model(self) -> str:
        return self._llm.provider.model

    def _ask(self, report: Report) -> _Answer:
        if self._given_up.is_set():
            return _Answer(None, LLMUsage(), "not asked: the LLM failed earlier in this run", asked=False)
        prompt = summary_prompt(report)
        try:
            completion = self._llm.complete(SYSTEM_PROMPT, prompt, max_tokens=MAX_TOKENS)
        except LLMRefusedError as exc:  # this one request refused (too long, filtered): the rest go on
            return _Answer(None, LLMUsage(), str(exc))
        except LLMError as exc:
            self._given_up.set()
            return _Answer(None, LLMUsage(), str(exc), failed=True)
        if completion.truncated:
            return _Answer(None, completion.usage(), f"answer cut off at {MAX_TOKENS} tokens")
        summary = parse_summary(completion.text)
        if summary is None or copies_example(summary, prompt):
            excerpt = " ".join(completion.text.split())[:120]
            return _Answer(None, completion.usage(), f"no title and summary of its own in {excerpt!r}")
        return _Answer(summary, completion.usage())

    def write(
        self,
        reports: dict[str, Report],
        *,
        progress: Progress | None = None,
        should_stop: ShouldStop | None = None,
    ) -> tuple[dict[str, Report], ThemeSummariesReport]:
        """`reports` with an LLM title and summary added where one was missing (see the module's
        note), and what that took. Never raises for the LLM's sake. `progress` hears each answer
        ("theme summaries", done, total); once `should_stop` says True no more themes are asked
        (the index run's own work is already stored: the themes not asked keep their extractive
        titles, and the next run asks for them)."""
        started = time.perf_counter()
        wanted = [cid for cid, r in reports.items() if r.llm_model != self.model]
        done_count = [0]
        lock = threading.Lock()

        def ask(report: Report) -> _Answer:
            if should_stop is not None and should_stop():
                self._given_up.set()
                return _Answer(None, LLMUsage(), "not asked: the run was cancelled", asked=False, cancelled=True)
            answer = self._ask(report)
            if progress is not None:
                with lock:
                    done_count[0] += 1
                    progress(SUMMARY_STAGE, done_count[0], len(wanted))
            return answer

        with ThreadPoolExecutor(max_workers=self._concurrency, thread_name_prefix="cuerag-themes") as pool:
            answers = list(pool.map(ask, [reports[cid] for cid in wanted]))
        out = dict(reports)
        failure = ""
        for cid, answer in zip(wanted, answers, strict=True):
            if answer.summary is not None:
                written = answer.summary
                out[cid] = dataclasses.replace(
                    reports[cid], llm_title=written.title, llm_summary=written.summary, llm_model=self.model
                )
            elif answer.failed and not failure:
                failure = answer.problem
            elif answer.asked and not answer.failed:
                log.warning("theme %s keeps its extractive title: %s", cid, answer.problem)
        done = sum(a.summary is not None for a in answers)
        if not failure and any(a.cancelled for a in answers):
            failure = "cancelled: the themes not asked keep their extractive titles until the next run"
        if failure:
            log.warning("theme summaries stopped; %d themes keep extractive titles: %s", len(wanted) - done, failure)
        report = ThemeSummariesReport(
            requested=len(wanted),
            written=done,
            fallback=len(wanted) - done,
            usage=sum((a.usage for a in answers), LLMUsage()),
            seconds=round(time.perf_counter() - started, 3),
            problem=failure,
        )
        return out, report
