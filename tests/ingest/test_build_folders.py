"""A documentation build indexes as a person would expect (issue 30): what Sphinx writes beside its
pages and vendored packages are left out by default, told in the report by reason with a bounded
list of paths, and let in by an include glob that names them; a JSON file in a walked folder is a
corpus only when it has a corpus's shape and parses (named outright, it is a corpus as before)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cuerag.engine.facade import CueRag
from cuerag.errors import InputError
from cuerag.index.sync import plan_sync
from cuerag.ingest.artefacts import NOT_A_CORPUS, NOT_JSON, SHOWN_PATHS, SPHINX, VENDORED
from cuerag.ingest.folders import WalkRules, walk_paths

PAGE = '<html><body><div role="main"><h1>{title}</h1><p>{text} <a href="{href}">more</a></p></div></body></html>'
PAGES = {
    "index.html": PAGE.format(title="Lumen X3", text="The Lumen X3 has a full-frame sensor.", href="guide.html"),
    "guide.html": PAGE.format(title="Lenses", text="The Lumen X3 takes prime lenses.", href="index.html"),
}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def sphinx_build(base: Path) -> Path:
    """A few files shaped like a Sphinx HTML build, with a vendored folder and JSON beside them."""
    build = base / "html"
    for name, text in PAGES.items():
        write(build / name, text)
    write(build / ".buildinfo", "# Sphinx build info version 1\nconfig: 0123\ntags: 4567\n")
    write(build / "searchindex.js", 'Search.setIndex({"docnames": ["index", "guide"]})')
    write(build / "genindex.html", PAGE.format(title="Index", text="A | B | C", href="index.html"))
    write(build / "search.html", PAGE.format(title="Search", text="Please activate JavaScript.", href="index.html"))
    write(build / "_sources" / "index.rst.txt", "Lumen X3\n========\n\nThe Lumen X3 has a full-frame sensor.\n")
    write(build / "_sources" / "guide.rst.txt", "Lenses\n======\n\nThe Lumen X3 takes prime lenses.\n")
    write(build / "_static" / "jquery" / "README.md", "# jQuery\n\nA JavaScript library.\n")
    write(build / "_static" / "jquery" / "bower.json", json.dumps({"name": "jquery", "main": {"js": "jquery.js"}}))
    write(build / "_modules" / "lumen.html", PAGE.format(title="lumen", text="def lumen(): ...", href="index.html"))
    write(build / "_images" / "notes.txt", "An image's alt text copy.\n")
    write(build / "node_modules" / "left-pad" / "README.md", "# left-pad\n\nPads strings.\n")
    write(build / "env" / "pyvenv.cfg", "home = /usr/bin\n")  # a virtual environment under any name
    write(build / "env" / "lib" / "README.txt", "A package's readme.\n")
    # JSON beside the pages: settings (no corpus) and a corpus of notes (records with a text).
    write(build / "theme.json", json.dumps({"colors": {"fg": "#000"}, "fonts": ["Lato"]}))
    write(build / "package.json", json.dumps({"name": "docs", "scripts": {"build": "sphinx-build"}}))
    write(build / "events.jsonl", json.dumps({"event": "build", "seconds": 3}) + "\n")
    write(build / "notes.jsonl", json.dumps({"title": "Battery", "text": "The battery lasts a day."}) + "\n")
    return build


def left_out(report_entries: list) -> dict[str, tuple[int, list[str]]]:
    return {e.reason: (e.count, e.paths) for e in report_entries}


def test_a_sphinx_build_is_walked_for_its_pages(tmp_path: Path) -> None:
    walk = walk_paths([sphinx_build(tmp_path)])
    assert sorted(f.source for f in walk.files) == [
        "events.jsonl",
        "guide.html",
        "index.html",
        "notes.jsonl",
        "package.json",
        "theme.json",
    ]
    told = left_out(walk.left_out.report())
    count, paths = told[SPHINX]
    assert count == 7 and len(paths) == SHOWN_PATHS  # bounded: the count says how many in all
    assert paths[:4] == ["_images/", "_modules/", "_sources/", "_static/"]  # a folder is one entry, never walked
    assert set(paths[4:]) < {"genindex.html", "search.html", "searchindex.js"}
    assert told[VENDORED] == (2, ["env/", "node_modules/"])
    assert SHOWN_PATHS == 5


def test_artefacts_are_let_in_by_an_include_glob_that_names_them(tmp_path: Path) -> None:
    build = sphinx_build(tmp_path)
    sources = walk_paths([build], rules=WalkRules(include=("_sources/**",)))
    assert sorted(f.source for f in sources.files) == ["_sources/guide.rst.txt", "_sources/index.rst.txt"]
    # A glob written for the pages matches genindex.html but does not name it: still left out.
    pages = walk_paths([build], rules=WalkRules(include=("*.html",)))
    assert sorted(f.source for f in pages.files) == ["guide.html", "index.html"]
    named = walk_paths([build], rules=WalkRules(include=("*.html", "genindex.html")))
    assert "genindex.html" in {f.source for f in named.files}


def test_a_search_page_outside_a_sphinx_build_is_read(tmp_path: Path) -> None:
    write(tmp_path / "notes" / "search.html", PAGE.format(title="Search", text="How we search.", href="a.html"))
    write(tmp_path / "notes" / "_static.md", "# Static\n\nA note named like a folder of a build.\n")
    walk = walk_paths([tmp_path / "notes"])
    assert sorted(f.source for f in walk.files) == ["_static.md", "search.html"]
    assert not walk.left_out.report()


# The head of a page Sphinx wrote (Debian's python-attr-doc, Read the Docs theme); the search page
# holds no text of its own, only a script that fills it.
SPHINX_HEAD = """<!DOCTYPE html><html class="writer-html5" lang="en"><head><meta charset="utf-8" />
<title>{title} &mdash; attrs 22.2.0 documentation</title>
<script data-url_root="./" id="documentation_options" src="_static/documentation_options.js"></script>
<script src="_static/searchtools.js"></script></head>"""


def test_the_pages_of_a_sphinx_build_copied_alone_leave_its_index_and_search_pages_out(tmp_path: Path) -> None:
    # No searchindex.js nor .buildinfo beside them: the pages themselves say Sphinx wrote them.
    docs = tmp_path / "docs"
    write(docs / "api.html", SPHINX_HEAD.format(title="API") + "<body><h1>API</h1><p>define()</p></body></html>")
    write(docs / "genindex.html", SPHINX_HEAD.format(title="Index") + "<body><h1>Index</h1><p>A | B</p></body></html>")
    write(docs / "search.html", SPHINX_HEAD.format(title="Search") + '<body><div id="search-results"></div></body>')
    notfound = "<body><h1>Page not found</h1><p>Go to the overview or search.</p></body></html>"
    write(docs / "404.html", SPHINX_HEAD.format(title="Page not found") + notfound)
    walk = walk_paths([docs])
    assert [f.source for f in walk.files] == ["api.html"]
    assert not walk.failed
    count, paths = left_out(walk.left_out.report())[SPHINX]
    assert count == 3 and sorted(paths) == ["404.html", "genindex.html", "search.html"]


def test_walked_json_without_a_corpus_shape_is_passed_over_with_the_reason(tmp_path: Path) -> None:
    build = sphinx_build(tmp_path)
    plan = plan_sync(walk_paths([build]), None, sync=False, strict=True)  # strict: nothing fails
    assert sorted(d.id for d in plan.documents if d.source != "notes.jsonl") == ["guide.html", "index.html"]
    assert [d.title for d in plan.documents if d.source == "notes.jsonl"] == ["Battery"]
    told = left_out(plan.left_out.report())
    assert told[NOT_A_CORPUS] == (3, ["events.jsonl", "package.json", "theme.json"])
    assert not plan.failed


def unparsed_json(folder: Path) -> list[Path]:
    """JSON files that do not parse: a config with comments, a corpus cut short, JSON Lines whose
    first line is broken, a file that is not UTF-8."""
    files = [folder / "tsconfig.json", folder / "cut.json", folder / "log.jsonl", folder / "latin1.json"]
    write(files[0], '{\n  // the compiler\'s options\n  "strict": true\n}\n')
    write(files[1], '[{"title": "Battery", "text": "The battery lasts')
    write(files[2], '{"title": "Battery", "text": "cut\n{"title": "Lens", "text": "A prime lens."}\n')
    files[3].write_bytes('{"title": "Café", "text": "Très bien."}'.encode("latin-1"))
    return files


def test_walked_json_that_does_not_parse_is_passed_over_with_the_reason(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    unparsed_json(folder)
    write(folder / "lens.md", "# Lens\n\nA prime lens.\n")
    # A corpus whose first record parses has the shape: a broken line after it fails the file.
    write(folder / "corpus.jsonl", json.dumps({"title": "A", "text": "ok"}) + "\n{oops}\n")
    plan = plan_sync(walk_paths([folder]), None, sync=False, strict=False)
    assert [d.id for d in plan.documents] == ["lens.md"]
    told = left_out(plan.left_out.report())
    assert told == {NOT_JSON: (4, ["cut.json", "latin1.json", "log.jsonl", "tsconfig.json"])}
    assert [(Path(f.path).name, f.reason) for f in plan.failed] == [
        ("corpus.jsonl", "line 2 is not valid JSON (Expecting property name enclosed in double quotes, column 2)")
    ]


def test_json_that_does_not_parse_named_outright_is_an_error_that_says_where(tmp_path: Path) -> None:
    tsconfig, cut, log, latin1 = unparsed_json(tmp_path)
    expected = {
        tsconfig: r"tsconfig\.json: not valid JSON \(Expecting property name .* at line 2, column 3\)",
        cut: r"cut\.json: not valid JSON \(Unterminated string .* line 1, column 31\)",
        log: r"log\.jsonl: line 1 is not valid JSON \(Unterminated string .*, column 30\)",
        latin1: r"latin1\.json: file is not valid UTF-8 \(byte 14\)",
    }
    for path, reason in expected.items():
        with pytest.raises(InputError, match=reason):
            plan_sync(walk_paths([path]), None, sync=False, strict=True)
        plan = plan_sync(walk_paths([path]), None, sync=False, strict=False)
        assert len(plan.failed) == 1 and not plan.left_out.report()


def test_a_folder_of_only_json_that_does_not_parse_says_what_it_left_out(engine: CueRag, tmp_path: Path) -> None:
    write(tmp_path / "notes" / "cut.json", '[{"title": "Battery", "text": "The battery lasts')
    with pytest.raises(InputError, match="no indexable files") as error:
        engine.index_paths("none", [tmp_path / "notes"])
    assert str(error.value).endswith(f"; left out: 1 ({NOT_JSON}): cut.json")
    assert engine.corpora() == []


def test_json_named_outright_is_a_corpus_as_before(tmp_path: Path) -> None:
    build = sphinx_build(tmp_path)
    plan = plan_sync(walk_paths([build / "theme.json"]), None, sync=False, strict=False)
    assert [f.reason for f in plan.failed] == [
        "theme.json['colors']: expected a list of sentences or a string, got dict"
    ]
    assert not plan.left_out.report()


def test_an_index_of_a_build_reports_what_it_left_out(engine: CueRag, tmp_path: Path) -> None:
    report = engine.index_paths("build", [sphinx_build(tmp_path)])
    assert not report.failed
    graph = engine.graph("build")
    docs = set(graph.chunk_docs)
    assert {"guide.html", "index.html"} < docs and len(docs) == 3  # the pages and the notes' record
    told = left_out(report.left_out)
    assert (told[SPHINX][0], told[VENDORED][0], told[NOT_A_CORPUS][0]) == (7, 2, 3)
    edges = {(graph.chunk_docs[c], t) for c, links in enumerate(graph.chunk_links) for t in links.values()}
    assert edges == {("index.html", "guide.html"), ("guide.html", "index.html")}
