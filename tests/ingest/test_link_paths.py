"""Hyperlinks resolve the same whatever form the folder was given in (issue 30): `DIR`, `./DIR`,
`.`, `..`, an absolute path, a symlinked folder; and a corpus indexed by a version that resolved
them against the wrong folder is repaired by the next run, nothing embedded again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cuerag.engine.facade import CueRag
from cuerag.graph.schema import CHUNKS, collection_name
from cuerag.index.sync import plan_sync
from cuerag.ingest.folders import walk_paths
from cuerag.ingest.formats.targets import resolve_target
from cuerag.store.base import StoredPoint

# Links from a subfolder, up from it, and down into it: the three a wrong base breaks differently.
FILES = {
    "index.md": "# Index\n\nStart at [alpha](sub/alpha.md) for the Lumen X3 camera.\n",
    "sub/alpha.md": (
        "# Alpha\n\nThe Lumen X3 has a full-frame sensor; see [beta](beta.md) for its lenses "
        "and [the index](../index.md) for the rest.\n"
    ),
    "sub/beta.md": "# Beta\n\nThe Lumen X3 takes prime lenses made in Osaka.\n",
    "sub/gamma.html": (
        '<html><body><h1>Gamma</h1><p>The battery lasts a day; <a href="beta.md">lenses</a>.</p></body></html>'
    ),
}
EDGES = {
    ("index.md", "sub/alpha.md"),
    ("sub/alpha.md", "sub/beta.md"),
    ("sub/alpha.md", "index.md"),
    ("sub/gamma.html", "sub/beta.md"),
}


def make_linktest(base: Path) -> Path:
    folder = base / "linktest"
    for name, text in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def edges(engine: CueRag, corpus: str) -> set[tuple[str, str]]:
    graph = engine.graph(corpus)
    return {(graph.chunk_docs[c], target) for c, links in enumerate(graph.chunk_links) for target in links.values()}


# (where to stand, what to name): each relative to the tmp folder that holds `linktest`.
FORMS = {
    "DIR": (".", "linktest"),
    "./DIR": (".", "./linktest"),
    "DIR/": (".", "linktest/"),
    ".": ("linktest", "."),
    "..": ("linktest/sub", ".."),
    "absolute": (None, None),
    "symlinked": (None, "link"),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_links_resolve_the_same_whatever_form_the_folder_is_named_in(
    form: str, engine: CueRag, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = make_linktest(tmp_path)
    stand, named = FORMS[form]
    if form == "absolute":
        target: str | Path = folder.resolve()
    elif form == "symlinked":
        (tmp_path / "link").symlink_to(folder, target_is_directory=True)
        target = tmp_path / "link"
    else:
        assert stand is not None and named is not None
        monkeypatch.chdir(tmp_path / stand)
        target = named
    engine.index_paths("lt", [target])
    assert edges(engine, "lt") == EDGES
    assert engine.graph("lt").sizes["link_edges"] == len(EDGES)


def _as_the_old_code_wrote(point: StoredPoint) -> StoredPoint:
    """A chunk as a version with the bug stored it: its source right (the walk's), its links
    resolved against the root instead of the file's folder (the bare file name)."""
    payload = dict(point.payload)
    name = str(payload["source"]).rsplit("/", 1)[-1]
    payload["links"] = [
        {**link, "doc_id": resolve_target(str(link["target"]), name)} for link in payload.get("links", [])
    ]
    return StoredPoint(id=point.id, payload=payload, vector=point.vector)


def test_a_corpus_indexed_with_the_bug_is_repaired_without_embedding_again(engine: CueRag, tmp_path: Path) -> None:
    folder = make_linktest(tmp_path)
    engine.index_paths("lt", [folder])
    graph = engine.graph("lt")
    assert graph.points is not None
    broken = [_as_the_old_code_wrote(p) for p in graph.points.chunks.values()]
    assert any(p.payload != graph.points.chunks[p.id].payload for p in broken)
    engine.store.upsert(collection_name("lt", CHUNKS), broken)
    engine.snapshots.forget("lt")  # read from the store again, as a new process would
    assert edges(engine, "lt") != EDGES  # the old index, as a user would find it

    report = engine.index_paths("lt", [folder])
    assert edges(engine, "lt") == EDGES
    assert report.chunks_added == 0 and report.units_added == 0  # nothing embedded again
    assert report.documents_unchanged == len(FILES)
    # sub/alpha.md and sub/gamma.html: index.md's links were right (resolved from the root either
    # way) and beta.md has none.
    assert report.repaired == 2
    # Repaired once: the next run finds nothing stale and skips every file.
    again = engine.index_paths("lt", [folder])
    assert again.repaired == 0 and again.files["skipped"] == len(FILES)
    assert edges(engine, "lt") == EDGES


def test_walked_paths_carry_their_source_under_the_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cheap check under the engine's: the documents read from `.` hold links resolved from
    their own folder."""
    folder = make_linktest(tmp_path)
    monkeypatch.chdir(folder / "sub")
    plan = plan_sync(walk_paths([".."]), None, sync=False, strict=True)
    links = {(d.id, link.doc_id) for d in plan.documents if d.structure for link in d.structure.links if link.doc_id}
    assert links == EDGES
    assert os.path.isabs(plan.documents[0].root or "")
