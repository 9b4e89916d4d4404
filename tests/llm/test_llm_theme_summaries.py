"""Theme titles and summaries written by a real LLM (issue 32, item 6): llama-cpp-python's server
running SmolLM2-135M (`llm_server`), reached over HTTP. A 135M model writes poor summaries and
sometimes none worth keeping; what is tested is the path: prompts out, answers stored beside the
extractive titles and shown by every reader, the response cache making a rerun free, an update
asking only about the themes it changed, and a failing LLM leaving the extractive titles with a
report line, which the next run completes."""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import MODEL_ALIAS, server_settings
from typer.testing import CliRunner

import cuerag.cli.app
import cuerag.cli.context
from cuerag import CueRag, Document, Settings, make_document
from cuerag.cli.render import print_report
from cuerag.communities.reports import Report
from cuerag.communities.stored import load_themes
from cuerag.communities.theme_search import GlobalSearchResult
from cuerag.index.report import ThemeSummariesReport
from cuerag.models.loading import Models

# Three subjects, three documents each: three themes, and a fourth bread document changes one.
DOCS = {
    "Write-ahead log": "The write-ahead log records every change before it reaches the database file. "
    "A checkpoint copies the logged pages back into the database file.",
    "Rollback journal": "The rollback journal keeps the original pages of the database file during a transaction. "
    "After a crash, the journal restores the database file to its state before the transaction.",
    "Fsync and durability": "A transaction is durable once fsync has flushed the database file and its journal "
    "to the disk. Without fsync a power failure can lose a committed transaction.",
    "Sourdough starter": "A sourdough starter is a culture of flour, water, wild yeast and lactic acid bacteria. "
    "The starter is fed with fresh flour and water every day.",
    "Bread proofing": "Proofing lets the dough rise as the yeast produces carbon dioxide. "
    "A sourdough loaf proofs slowly, often overnight in a cool kitchen.",
    "Baking in a Dutch oven": "A Dutch oven traps steam around the loaf while it bakes, so the crust stays soft "
    "long enough for the bread to rise. The lid comes off for the last twenty minutes to brown the crust.",
    "Tide pools": "Tide pools form in rocky hollows that the sea fills at high tide. "
    "Anemones, crabs and sea stars live in tide pools between the tides.",
    "Sea stars": "A sea star moves on hundreds of tube feet and feeds on mussels by pushing its stomach into their "
    "shells. Sea stars can regrow a lost arm.",
    "Mussel beds": "Mussels attach to rocks with byssal threads and filter plankton from the water. "
    "Mussel beds shelter crabs and worms on rocky shores.",
}
NEW = (
    "Rye bread",
    "Rye flour holds little gluten, so a rye loaf is dense. A rye sourdough starter gives the bread its sour "
    "taste, and the dough proofs in a basket.",
)


def _docs() -> list[Document]:
    return [make_document(title, text) for title, text in DOCS.items()]


def _settings(data_dir: Path, url: str, **extra: object) -> Settings:
    return server_settings(data_dir, url, **extra)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data directory, and so one LLM cache, for the module: each test indexes its own corpus,
    and a prompt another test already sent costs no second call to the slow local model."""
    return tmp_path_factory.mktemp("summaries")


@pytest.fixture
def engine(llm_server: str, models: Models, data_dir: Path) -> Iterator[CueRag]:
    engine = CueRag(_settings(data_dir, llm_server), models=models)
    yield engine
    engine.close()


def _stored(engine: CueRag, corpus: str) -> dict[str, Report]:
    themes = load_themes(engine.store, corpus)
    assert themes is not None
    return themes.reports


def _point_ids(engine: CueRag, corpus: str) -> dict[str, str]:
    themes = load_themes(engine.store, corpus)
    assert themes is not None
    return themes.point_ids()


def _summaries(report: object) -> ThemeSummariesReport:
    themes = getattr(report, "themes", None)
    assert themes is not None and themes.summaries is not None
    return themes.summaries


def _extractive(r: Report) -> tuple[object, ...]:
    """A report without what the LLM wrote."""
    return (r.level, r.title, r.terms, r.entities, r.evidence, r.documents, r.parent, r.children)


def test_titles_and_summaries_are_stored_shown_and_a_rerun_asks_nothing_new(
    llm_server: str, models: Models, data_dir: Path
) -> None:
    engine = CueRag(_settings(data_dir, llm_server), models=models)
    try:
        stored, cid, overview = _index_and_read(engine)
    finally:
        engine.close()
    r = stored[cid]
    # The CLI shows them too (a process of its own, no LLM configured: reading needs none).
    runner = CliRunner()
    base = ["-c", "one", "--data-dir", str(data_dir)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cuerag.cli.context, "make_own_engine", functools.partial(CueRag, models=models))
        opened_cli = runner.invoke(cuerag.cli.app.app, ["themes", *base, "--theme", cid])
        listed_cli = runner.invoke(cuerag.cli.app.app, ["themes", *base, "--json"])
        global_cli = runner.invoke(cuerag.cli.app.app, ["global", "", *base])
    assert opened_cli.exit_code == 0, opened_cli.output
    assert r.llm_title and r.llm_summary
    assert r.llm_title in opened_cli.stdout and r.llm_summary in opened_cli.stdout
    assert {t["theme_id"]: t["summary"] for t in json.loads(listed_cli.stdout)["themes"]} == {
        c: s.llm_summary for c, s in stored.items()
    }
    assert global_cli.exit_code == 0
    assert any(g.summary in global_cli.stdout for g in overview.groups if g.summary)


def _index_and_read(engine: CueRag) -> tuple[dict[str, Report], str, GlobalSearchResult]:
    """Index the documents, check what the LLM wrote as every reader shows it, and index them
    again twice (same corpus, another one); the reports, a theme with an LLM title, the overview."""
    report = engine.index_documents("one", _docs())
    assert report.themes is not None and report.themes.communities == 3
    first = _summaries(report)
    assert first.requested == 3 and first.written + first.fallback == 3 and not first.problem
    assert first.usage.calls + first.usage.cached_calls == 3
    assert first.written >= 1, "SmolLM2 wrote no usable title and summary for any theme"
    stored = _stored(engine, "one")
    written = {cid: r for cid, r in stored.items() if r.llm_title is not None}
    assert len(written) == first.written
    for r in written.values():
        assert r.llm_summary and r.llm_model == MODEL_ALIAS
        assert r.title == " · ".join(r.terms)  # the extractive title stays beside the LLM's

    listing = engine.themes("one", theme_id=None, level=0, offset=0, limit=20)
    shown = {t.theme_id: (t.title, t.summary) for t in listing.themes}
    assert shown == {cid: (r.llm_title or r.title, r.llm_summary) for cid, r in stored.items()}
    cid, r = next(iter(written.items()))
    opened = engine.themes("one", theme_id=cid, level=0, offset=0, limit=20).theme
    assert opened is not None and (opened.title, opened.summary) == (r.llm_title, r.llm_summary)
    overview = engine.global_search("one", "", budget_tokens=2000)  # the top themes, each with its heading
    assert {g.theme_id: (g.title, g.summary) for g in overview.groups} == {
        g.theme_id: (stored[g.theme_id].llm_title or stored[g.theme_id].title, stored[g.theme_id].llm_summary)
        for g in overview.groups
    }
    assert any(g.summary for g in overview.groups)

    # Nothing changed: only the themes left without a summary are asked again, from the cache.
    before_rerun = _point_ids(engine, "one")
    again = _summaries(engine.index_documents("one", _docs()))
    assert (again.requested, again.usage.calls, again.usage.cached_calls) == (first.fallback, 0, first.fallback)
    assert _point_ids(engine, "one") == before_rerun  # not one point rewritten

    # The same documents in another corpus: every answer from the cache, the same titles.
    other = _summaries(engine.index_documents("two", _docs()))
    assert (other.usage.calls, other.usage.cached_calls, other.written) == (0, 3, first.written)
    assert Counter((r.llm_title, r.llm_summary) for r in _stored(engine, "two").values()) == Counter(
        (r.llm_title, r.llm_summary) for r in stored.values()
    )

    return stored, cid, overview


def test_an_update_asks_only_about_the_themes_it_changed(engine: CueRag) -> None:
    engine.index_documents("live", _docs())
    before = _stored(engine, "live")
    update = _summaries(engine.index_documents("live", [make_document(*NEW)]))
    after = _stored(engine, "live")
    changed = {c for c, r in after.items() if c not in before or _extractive(r) != _extractive(before[c])}
    kept = set(after) - changed
    assert len(changed) == 1 and len(kept) == 2  # the new document joined one theme
    missing = {c for c in kept if before[c].llm_title is None}  # earlier answers that were unusable
    assert update.requested == len(changed) + len(missing)
    assert (update.usage.calls, update.usage.cached_calls) == (len(changed), len(missing))
    for c in kept - missing:
        assert (after[c].llm_title, after[c].llm_summary) == (before[c].llm_title, before[c].llm_summary)


def test_a_failing_llm_leaves_the_extractive_titles_and_the_next_run_completes(
    llm_server: str, models: Models, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    down = CueRag(_settings(data_dir, "http://127.0.0.1:9/v1", llm_max_retries=0), models=models)
    try:
        report = down.index_documents("down", _docs())  # nothing listens on port 9
        failed = _summaries(report)
        assert (failed.requested, failed.written, failed.fallback, failed.usage.calls) == (3, 0, 3, 0)
        assert "127.0.0.1:9" in failed.problem
        assert report.chunks_added == len(DOCS)  # the index run itself went through
        stored = _stored(down, "down")
        assert all(r.llm_title is None for r in stored.values())
        listing = down.themes("down", theme_id=None, level=0, offset=0, limit=20)
        assert {(t.title, t.summary) for t in listing.themes} == {(r.title, None) for r in stored.values()}
        print_report(report)
        shown = capsys.readouterr().out
        assert "theme summaries (LLM): 0 of 3 written, 3 kept their extractive title" in shown
        assert "theme summaries stopped: " in shown
    finally:
        down.close()
    up = CueRag(_settings(data_dir, llm_server), models=models)
    try:
        completed = _summaries(up.index_documents("down", _docs()))  # nothing to index; the summaries are due
        assert completed.requested == 3 and not completed.problem
        assert sum(r.llm_title is not None for r in _stored(up, "down").values()) == completed.written
    finally:
        up.close()
