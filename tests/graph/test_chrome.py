"""Site chrome across documents (issue 30): a unit that more than half of a corpus's documents hold,
and at least ten of them, is kept out of the graph's units, entities and walk, whatever the format;
small corpora and phrases a few pages share stay; the rule follows the corpus as documents come and
go, the chrome units staying stored."""

from __future__ import annotations

from pathlib import Path

from cuerag.engine.facade import CueRag
from cuerag.graph.chrome import CHROME_MIN_DOCUMENTS
from cuerag.graph.schema import UNITS, collection_name

# What a generator's theme puts on every page below the content, that no class or id names as
# chrome (so the page-level extractor keeps it): only the count across pages gives it away.
FOOTER = "Copyright 2024 Quillmark Software AB. All rights reserved."
BACK = "Return to the Quillmark manual index page."
TOPICS = [
    ("install", "Quillmark installs from a tarball into /opt/quillmark on Linux hosts."),
    ("backup", "The quillmark-dump tool writes a nightly backup of every notebook."),
    ("restore", "A backup is restored with quillmark-load and a notebook name."),
    ("sync", "Notebooks synchronise over SSH with the quillmark-sync daemon."),
    ("themes", "Themes live in ~/.quillmark/themes as plain CSS files."),
    ("plugins", "Plugins are Lua scripts loaded at start from the plugins folder."),
    ("export", "Notebooks export to PDF through the built-in Typst renderer."),
    ("search", "Full-text search uses a trigram index rebuilt every hour."),
    ("keys", "Keyboard shortcuts are listed in the help menu under Keys."),
    ("logs", "Logs rotate weekly and are kept for ninety days."),
    ("upgrade", "An upgrade keeps notebooks and converts their index in place."),
    ("licence", "The community edition is free for teams of up to five people."),
]


def page(title: str, body: str, *, chrome: bool) -> str:
    tail = f"<p>{BACK}</p><p class='legal'>{FOOTER}</p>" if chrome else ""
    return (
        f"<html><head><title>{title}</title></head><body><div class='page'><h1>{title}</h1>"
        f"<p>{body}</p>{tail}</div></body></html>"
    )


def write_site(folder: Path, topics: list[tuple[str, str]], *, chrome: bool = True) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, body in topics:
        (folder / f"{name}.html").write_text(page(name.title(), body, chrome=chrome))


def units_holding(engine: CueRag, corpus: str, words: str) -> list[str]:
    return [t for t in engine.graph(corpus).unit_texts if words in t]


def test_a_footer_on_every_page_is_chrome_out_of_units_entities_and_walk(engine: CueRag, tmp_path: Path) -> None:
    write_site(tmp_path / "site", TOPICS)
    report = engine.index_paths("site", [tmp_path / "site"])
    graph = engine.graph("site")
    assert not units_holding(engine, "site", "All rights reserved")
    assert not units_holding(engine, "site", "manual index page")
    assert graph.sizes["chrome_units"] >= 2 and graph.sizes["chrome_unit_edges"] >= 2 * len(TOPICS)
    assert report.totals["chrome_units"] == graph.sizes["chrome_units"]  # reported with the run
    # The company is named only in the footer: no entity of the graph.
    assert not [n for n in graph.entity_names if "Quillmark Software" in n]
    # Every unit left is in fewer documents than the threshold.
    for chunks in graph.unit_chunks:
        assert len({graph.chunk_docs[c] for c in chunks}) <= len(TOPICS) // 2
    # The content stays, and a query about backups walks no footer to the other pages.
    assert units_holding(engine, "site", "nightly backup")
    found = engine.query("site", "Which tool writes a nightly backup?")
    assert found.chunks[0].doc_id == "backup.html"


def test_a_small_corpus_keeps_the_sentence_all_its_documents_share(engine: CueRag, tmp_path: Path) -> None:
    few = TOPICS[: CHROME_MIN_DOCUMENTS - 1]
    write_site(tmp_path / "notes", few)
    engine.index_paths("notes", [tmp_path / "notes"])
    assert units_holding(engine, "notes", "All rights reserved")
    assert engine.graph("notes").sizes["chrome_units"] == 0


def test_chrome_follows_the_corpus_as_documents_come_and_go(engine: CueRag, tmp_path: Path) -> None:
    """Five pages with the footer, seven without: knowledge. Seven more with it (twelve of
    nineteen): chrome, still stored. The seven deleted again: knowledge once more."""
    site = tmp_path / "site"
    write_site(site, TOPICS[:5])
    write_site(site, TOPICS[5:], chrome=False)
    engine.index_paths("grow", [site], sync=True)
    assert units_holding(engine, "grow", "All rights reserved")

    more = [(f"extra-{name}", body.replace("Quillmark", "Quillmark Pro")) for name, body in TOPICS[:7]]
    write_site(site, more)
    engine.index_paths("grow", [site], sync=True)
    graph = engine.graph("grow")
    assert len(set(graph.chunk_docs)) == 19
    assert not units_holding(engine, "grow", "All rights reserved")
    stored = [p.payload["text"] for p in engine.store.scroll(collection_name("grow", UNITS), with_vectors=False)]
    assert any("All rights reserved" in t for t in stored)  # kept in the store: the corpus may change back

    for name, _ in more:
        (site / f"{name}.html").unlink()
    engine.index_paths("grow", [site], sync=True)
    assert units_holding(engine, "grow", "All rights reserved")
    assert engine.graph("grow").sizes["chrome_units"] == 0
