"""Bad input through the engine: refused before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import EngineFactory, point_counts

from cuerag.engine.facade import CueRag
from cuerag.errors import CueRagError, InputError, InvalidNameError, ReadOnlyError
from cuerag.graph.snapshot import load_graph
from cuerag.ingest.documents import Document, make_document


def test_missing_path_creates_nothing(engine: CueRag, tmp_path: Path) -> None:
    before = engine.corpora()
    with pytest.raises(InputError, match="path not found"):
        engine.index_paths("fresh", [tmp_path / "missing.json"])
    assert engine.corpora() == before == []
    assert engine.store.list_collections() == []


def test_good_and_malformed_file_in_a_folder_writes_nothing_when_strict(engine: CueRag, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a-good.json").write_text(
        json.dumps([{"id": "g", "title": "Good", "text": "Vienna lies on the Danube."}])
    )
    # A corpus (its first record has the shape) with a broken record further on.
    (folder / "b-bad.jsonl").write_text('{"title": "Good", "text": "ok"}\n{"title": "Bad", "text": "broken"\n')
    with pytest.raises(InputError, match=r"b-bad\.jsonl: line 2 is not valid JSON"):
        engine.index_paths("fresh", [folder], strict=True)
    assert engine.corpora() == []
    assert engine.store.list_collections() == []
    # Without strict, the bad file is a line in the report and the good one is indexed.
    report = engine.index_paths("fresh", [folder])
    assert [(Path(f.path).name, f.reason[:24]) for f in report.failed] == [("b-bad.jsonl", "line 2 is not valid JSON")]
    assert engine.info("fresh").documents == 1


def test_bad_input_leaves_an_existing_corpus_untouched(engine: CueRag, tmp_path: Path) -> None:
    engine.index_documents("kept", [Document(id="v", title="Vienna", text="Vienna lies on the Danube.")])
    counts = point_counts(engine, "kept")
    graph = engine.graph("kept")

    good = tmp_path / "good.txt"
    good.write_text("Salzburg lies on the Salzach.")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"title": "A", "text": "ok"}\n{oops}\n')
    with pytest.raises(InputError, match="line 2 is not valid JSON"):
        engine.index_paths("kept", [good, bad], strict=True)
    with pytest.raises(InputError, match="path not found"):
        engine.index_paths("kept", [good, tmp_path / "nope.md"])

    assert engine.corpora() == ["kept"]
    assert point_counts(engine, "kept") == counts
    assert load_graph(engine.store, "kept", dim=engine.models.embedder.dim).chunk_ids == graph.chunk_ids
    assert engine.info("kept").documents == 1


def test_documents_without_text_write_nothing(engine: CueRag) -> None:
    with pytest.raises(InputError, match="no document has any text"):
        engine.index_documents("fresh", [Document(id="a", title="A", text="  \n")])
    with pytest.raises(InputError, match="no document has any text"):
        engine.index_documents("fresh", [])
    assert engine.corpora() == []


def test_invalid_corpus_name_writes_nothing(engine: CueRag, tmp_path: Path) -> None:
    good = tmp_path / "good.txt"
    good.write_text("Salzburg lies on the Salzach.")
    with pytest.raises(InvalidNameError, match="invalid corpus name 'no spaces'"):
        engine.index_paths("no spaces", [good])
    assert engine.store.list_collections() == []


def test_errors_share_one_base_class() -> None:
    assert issubclass(InputError, CueRagError)
    assert issubclass(InvalidNameError, CueRagError)


def test_index_paths_then_query(engine: CueRag, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "vienna.md").write_text("# Vienna\nVienna is the capital of Austria. It lies on the Danube.\n")
    (folder / "salzburg.txt").write_text("Salzburg is a city in Austria. Mozart was born in Salzburg.\n")
    report = engine.index_paths("mini", [folder])
    assert report.documents_added == 2
    assert report.totals["documents"] == 2
    assert engine.corpora() == ["mini"]
    result = engine.query("mini", "Where was Mozart born?", method="dense")
    assert result.chunks[0].title == "salzburg"
    titles = {h.title for h in engine.query("mini", "What is the capital of Austria?").chunks}
    assert titles == {"Vienna", "salzburg"}


def test_drop_corpus(engine: CueRag) -> None:
    from cuerag.errors import CorpusNotFoundError

    engine.index_documents("gone", [Document(id="v", title="Vienna", text="Vienna lies on the Danube.")])
    engine.index_documents("stays", [Document(id="s", title="Salzburg", text="Salzburg lies on the Salzach.")])
    engine.drop_corpus("gone")
    assert engine.corpora() == ["stays"]
    assert not any("gone" in name for name in engine.store.list_collections())
    with pytest.raises(CorpusNotFoundError, match="corpora that exist: stays"):
        engine.query("gone", "Where is Vienna?")
    with pytest.raises(CorpusNotFoundError):
        engine.drop_corpus("gone")
    assert engine.info("stays").chunks == 1


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"a": ' * 5_000 + "1" + "}" * 5_000])
def test_deeply_nested_json_is_refused_clearly(engine: CueRag, tmp_path: Path, text: str) -> None:
    path = tmp_path / "nested.json"
    path.write_text(text)
    with pytest.raises(InputError, match="nested too deeply"):
        engine.index_paths("nested", [path])
    assert "nested" not in engine.corpora()


def test_punctuation_only_document_is_kept_without_units(engine: CueRag) -> None:
    report = engine.index_documents(
        "punct", [make_document("dots", "... !!! ???", "dots"), make_document("ok", "Oslo is a city.", "ok")]
    )
    g = engine.graph("punct")
    assert report.documents_added == 2
    assert [len(g.chunk_units[g.chunk_pos[c]]) for c in g.chunk_ids] == [0, 1]  # sorted by doc id: dots, ok
    assert engine.query("punct", "Which city?", method="dense").chunks[0].doc_id == "ok"


def test_a_read_only_setting_changed_in_place_is_honoured_at_once(make_engine: EngineFactory) -> None:
    """The engine reads its settings live: a copy kept by one of its parts would go on writing."""
    engine = make_engine()
    engine.index_documents("c", [make_document("A", "Alpha is a letter.", "a")])
    engine.settings.read_only = True
    with pytest.raises(ReadOnlyError):
        engine.index_documents("c", [make_document("B", "Beta is a letter.", "b")])
    assert engine.info("c").documents == 1
