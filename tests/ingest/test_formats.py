"""Each format through its real library on real files (SQLite's HTML pages, a TeX Live PDF manual)
or realistic ones made here (Markdown notes, DOCX through python-docx): titles, sections, pages,
links, spans; and every kind of bad file refused with one clear line."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import docx
import pytest

from cuerag.errors import InputError
from cuerag.index.sync import load_paths
from cuerag.ingest.documents import load_file
from cuerag.ingest.formats import SUPPORTED_SUFFIXES, ReadLimits

DATA = Path(__file__).parent.parent / "data" / "formats"
SQLITE = DATA / "sqlite"
CHROME = ("About Documentation Download", "Search Documentation", "Purchase")  # SQLite's menu bar


def one(path: Path, root: Path | None = None, **kwargs: object) -> object:
    (doc,) = load_file(path, root=root or path.parent, **kwargs)  # type: ignore[arg-type]
    return doc


# ---- HTML ----------------------------------------------------------------------------------------


def test_html_title_main_content_sections_and_links() -> None:
    docs = {d.id: d for d in load_paths([SQLITE])}
    assert set(docs) == {p.name for p in SQLITE.glob("*.html")}
    doc = docs["expridx.html"]
    assert doc.title == "Indexes On Expressions"  # the <title>
    assert doc.source == "expridx.html"
    for chrome in CHROME:
        assert chrome not in doc.text
    assert "Table Of Contents" not in doc.text  # the fancy_toc box is chrome
    structure = doc.structure
    assert structure is not None and structure.format == "html"
    paths = [s.path for s in structure.sections]
    assert ["1. How To Use Indexes On Expressions"] in paths and ["2. Restrictions"] in paths
    for sec in structure.sections:
        if sec.path:  # a section's span starts with its heading line
            assert doc.text[sec.start : sec.heading_end] == sec.path[-1]
    # hyperlinks: anchor text at its span, target resolved to the page's id, anchors stripped
    by_target = {link.doc_id: link for link in structure.links if link.doc_id}
    link = by_target["deterministic.html"]
    assert doc.text[link.start : link.end] == link.text == "deterministic functions"
    assert any(link.target.startswith("lang_createindex.html") for link in structure.links)
    assert all(link.doc_id is None for link in structure.links if link.target.startswith(("http:", "https:")))


def test_html_legacy_encoding_declared_is_read_undeclared_is_refused(tmp_path: Path) -> None:
    page = "<html><head>{meta}<title>Café</title></head><body><p>Crème brûlée, naïve façade.</p></body></html>"
    declared = tmp_path / "declared.html"
    declared.write_bytes(page.format(meta='<meta charset="windows-1252">').encode("cp1252"))
    doc = one(declared)
    assert doc.title == "Café" and "Crème brûlée, naïve façade." in doc.text  # type: ignore[attr-defined]
    bare = tmp_path / "bare.html"
    bare.write_bytes(page.format(meta="").encode("cp1252"))
    with pytest.raises(InputError, match=r"not UTF-8 and declares no charset") as err:
        one(bare)
    assert "bare.html" in str(err.value) and "\n" not in str(err.value)


def test_html_truncated_and_empty_pages(tmp_path: Path) -> None:
    raw = (SQLITE / "expridx.html").read_bytes()
    cut = tmp_path / "cut.html"
    cut.write_bytes(raw[: len(raw) // 2])  # a truncated page: what it holds is read, no crash
    assert "Indexes On Expressions" in one(cut).text  # type: ignore[attr-defined]
    empty = tmp_path / "frames.html"
    empty.write_text("<html><head><script>go()</script></head><body><nav>Home</nav></body></html>")
    with pytest.raises(InputError, match="holds no text"):
        one(empty)


# ---- Markdown ------------------------------------------------------------------------------------

NOTE = """---
title: Lumen X3 camera
tags: [camera, review]
date: 2024-05-01
---
# Lumen X3

The Lumen X3 is a mirrorless camera.

## Sensor

The sensor has **45 megapixels** and is made by [Sony](https://sony.example/sensors#x).
See [the lens guide](guides/lenses.md#primes) and [[Battery Notes|the battery]].
"""


def test_markdown_front_matter_headings_links_and_wikilinks(tmp_path: Path) -> None:
    (tmp_path / "guides").mkdir()
    (tmp_path / "camera.md").write_text(NOTE)
    doc = one(tmp_path / "camera.md", root=tmp_path)
    assert doc.id == "camera.md"  # type: ignore[attr-defined]
    assert doc.title == "Lumen X3 camera"  # type: ignore[attr-defined]  # front matter wins
    s = doc.structure  # type: ignore[attr-defined]
    assert s.metadata == {"title": "Lumen X3 camera", "tags": ["camera", "review"], "date": "2024-05-01"}
    assert "#" not in doc.text and "**" not in doc.text and "](" not in doc.text  # type: ignore[attr-defined]
    assert "title:" not in doc.text  # type: ignore[attr-defined]
    assert [sec.path for sec in s.sections] == [["Lumen X3"], ["Lumen X3", "Sensor"]]
    links = {link.text: link for link in s.links}
    assert links["Sony"].doc_id is None  # leaves the corpus: kept as metadata
    assert links["the lens guide"].doc_id == "guides/lenses.md"
    assert links["the battery"].wiki and links["the battery"].target == "Battery Notes"
    for link in s.links:
        assert doc.text[link.start : link.end] == link.text  # type: ignore[attr-defined]


def test_markdown_title_falls_back_to_the_top_heading_then_file_name(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("Intro line.\n\n# Fjords\n\nOslo lies at the head of one.\n")
    (tmp_path / "b.md").write_text("No heading here, only text.\n")
    assert one(tmp_path / "a.md").title == "Fjords"  # type: ignore[attr-defined]
    assert one(tmp_path / "b.md").title == "b"  # type: ignore[attr-defined]


def test_a_section_heading_does_not_name_the_document(tmp_path: Path) -> None:
    # A README whose top is an image: its first text heading is a section ("Benchmarks"),
    # and as the title it would be matched wherever the word is written.
    (tmp_path / "zstd-README.md").write_text(
        '<p align="center"><img src="logo.png" alt=""></p>\n\nA fast compressor.\n\n'
        "## Benchmarks\n\nIt is fast.\n\n## Contributing\n\nSend patches.\n"
    )
    doc = one(tmp_path / "zstd-README.md")
    assert doc.title == "zstd-README"  # type: ignore[attr-defined]
    assert ["Benchmarks"] in [sec.path[-1:] for sec in doc.structure.sections]  # type: ignore[attr-defined]


def test_markdown_bad_front_matter_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.md").write_text("---\ntitle: [unclosed\n---\n# Body\n\ntext\n")
    with pytest.raises(InputError, match="front matter is not valid YAML") as err:
        one(tmp_path / "bad.md")
    assert "\n" not in str(err.value)


# ---- PDF -----------------------------------------------------------------------------------------


def test_pdf_title_pages_and_outline_sections() -> None:
    doc = one(DATA / "caption-light.pdf")
    assert doc.title == "The caption-light package"  # type: ignore[attr-defined]  # first line (no metadata title)
    s = doc.structure  # type: ignore[attr-defined]
    assert s.format == "pdf"
    assert [p.number for p in s.pages] == [1, 2]
    assert doc.text[s.pages[1].start :].startswith("1 Loading the package")  # type: ignore[attr-defined]
    assert "Abstract" in doc.text[s.pages[0].start : s.pages[0].end]  # type: ignore[attr-defined]
    assert [sec.path for sec in s.sections if sec.path] == [
        ["Contents"],
        ["1 Loading the package"],
        ["2 Commands"],
        ["3 Why this package?"],
    ]
    loading = next(sec for sec in s.sections if sec.path == ["1 Loading the package"])
    assert s.pages[1].start <= loading.start < s.pages[1].end  # the bookmark's page


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("encrypted.pdf", r"the PDF is encrypted \(password-protected\); decrypt it first"),
        ("scanned.pdf", r"no text layer \(a scan\?\); OCR is not done"),
    ],
)
def test_pdf_encrypted_and_scanned_are_refused_by_name(name: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as err:
        one(DATA / name)
    assert name in str(err.value) and "\n" not in str(err.value)


def test_pdf_truncated_and_corrupt(tmp_path: Path) -> None:
    raw = (DATA / "caption-light.pdf").read_bytes()
    (tmp_path / "cut.pdf").write_bytes(raw[:2000])
    (tmp_path / "junk.pdf").write_bytes(b"%PDF-1.5\n" + bytes(range(256)) * 8)
    for name in ("cut.pdf", "junk.pdf"):
        with pytest.raises(InputError, match=r"not a readable PDF|no text layer|no pages") as err:
            one(tmp_path / name)
        assert name in str(err.value) and "\n" not in str(err.value)


def test_pdf_over_the_page_and_byte_limits(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"has 2 pages, over the limit of 1"):
        one(DATA / "caption-light.pdf", limits=ReadLimits(max_pdf_pages=1))
    big = tmp_path / "big.pdf"
    with big.open("wb") as f:  # a 200 MB PDF, sparse: refused from its size, before a byte is read
        f.truncate(200 * 10**6)
    with pytest.raises(InputError, match=r"over the limit of 100 MiB per file") as err:
        one(big)
    assert "big.pdf" in str(err.value)


def _outlined_pdf(page_text: str, titles: list[str]) -> bytes:
    """A one-page PDF whose page shows `page_text` (Helvetica, one line) and whose outline has a
    bookmark to that page for each of `titles`."""
    # A string of a few thousand characters at a time: pdfium reads at most 32,767 of one.
    shown = " ".join(f"({page_text[i : i + 4096]}) Tj" for i in range(0, len(page_text), 4096))
    content = f"BT /F1 1 Tf 10 400 Td {shown} ET".encode()
    n = len(titles)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R /Outlines 5 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        b"<< /Type /Outlines /First 6 0 R /Last %d 0 R /Count %d >>" % (5 + n, n),
    ]
    for i, title in enumerate(titles):
        links = (b" /Prev %d 0 R" % (5 + i) if i else b"") + (b" /Next %d 0 R" % (7 + i) if i + 1 < n else b"")
        objects.append(b"<< /Title (%s) /Parent 5 0 R /Dest [3 0 R /Fit]%s >>" % (title.encode(), links))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def test_pdf_outline_titles_are_found_on_their_pages(tmp_path: Path) -> None:
    (tmp_path / "outlined.pdf").write_bytes(_outlined_pdf("Intro text. Second part here.", ["Second part"]))
    doc = one(tmp_path / "outlined.pdf")
    (second,) = [sec for sec in doc.structure.sections if sec.path]  # type: ignore[attr-defined]
    assert second.path == ["Second part"] and doc.text[second.start :].startswith("Second part")  # type: ignore[attr-defined]


def test_pdf_bookmark_titles_built_to_backtrack_are_not_searched(tmp_path: Path) -> None:
    """Before: a bookmark's title was searched for on its page from every position, each try as
    long as the page repeats the title: a 480 KB PDF whose page and three bookmark titles repeat
    "a " 60,000 times held the GIL (and with it a server's every call) for minutes. A title longer
    than a heading is not looked for now; its bookmark starts at its page's start. Read in a child
    process, so that a regression fails the bound instead of hanging."""
    import subprocess
    import sys

    path = tmp_path / "hostile.pdf"
    path.write_bytes(_outlined_pdf("a " * 60_000, ["a " * 60_001] * 3))
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from cuerag.ingest.documents import load_file\n"
        "(doc,) = load_file(Path(sys.argv[1]), root=Path(sys.argv[1]).parent)\n"
        "print(len([s for s in doc.structure.sections if s.path]), min(s.start for s in doc.structure.sections))\n"
    )
    # The bound is for a regression to fail rather than hang: the file reads in a second.
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=Path(__file__).parents[2],
    )
    assert done.stdout.split() == ["1", "0"], done.stderr[-2000:]


# ---- DOCX ----------------------------------------------------------------------------------------


def make_docx(path: Path) -> Path:
    d = docx.Document()
    d.core_properties.title = "Refund policy"
    d.add_heading("Billing", level=1)
    d.add_paragraph("Invoices are sent on the first of each month.")
    d.add_heading("Refunds", level=2)
    d.add_paragraph("Refunds are paid within 14 days of a request.")
    table = d.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text = "Plan"
    table.rows[0].cells[1].text = "Monthly"
    d.save(str(path))
    return path


def test_docx_title_headings_and_tables(tmp_path: Path) -> None:
    doc = one(make_docx(tmp_path / "policy.docx"))
    assert doc.title == "Refund policy"  # type: ignore[attr-defined]
    s = doc.structure  # type: ignore[attr-defined]
    assert [sec.path for sec in s.sections] == [["Billing"], ["Billing", "Refunds"]]
    refunds = s.sections[1]
    assert "Refunds are paid within 14 days" in doc.text[refunds.start : refunds.end]  # type: ignore[attr-defined]
    assert "Plan | Monthly" in doc.text  # type: ignore[attr-defined]


def test_docx_truncated_and_zip_bomb(tmp_path: Path) -> None:
    raw = make_docx(tmp_path / "ok.docx").read_bytes()
    (tmp_path / "cut.docx").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(InputError, match=r"not a valid DOCX \(the zip archive is truncated or corrupt") as err:
        one(tmp_path / "cut.docx")
    assert "\n" not in str(err.value)
    bomb = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            out.writestr(info, src.read(info))
        out.writestr("word/media/padding.bin", b"\0" * (40 * 2**20))  # 40 MiB of zeros: about 40 KB packed
    (tmp_path / "bomb.docx").write_bytes(bomb.getvalue())
    with pytest.raises(InputError, match=r"would expand to .*: a zip bomb\? refused") as err:
        one(tmp_path / "bomb.docx")
    assert "bomb.docx" in str(err.value)


# ---- any file ------------------------------------------------------------------------------------


def test_supported_suffixes_and_unsupported_file(tmp_path: Path) -> None:
    assert {".pdf", ".html", ".htm", ".docx", ".md", ".txt", ".json", ".jsonl"} <= SUPPORTED_SUFFIXES
    (tmp_path / "photo.png").write_bytes(b"\x89PNG")
    with pytest.raises(InputError, match=r"unsupported (file type|format) '\.png'"):
        load_paths([tmp_path / "photo.png"])


# ---- chunking ------------------------------------------------------------------------------------


def test_a_document_without_structure_is_chunked_as_before() -> None:
    """JSON records and plain text have no sections: their chunks (and so their point ids) are the
    token windows `TextTools.chunk` cuts, now with spans into the text."""
    from cuerag.ingest.documents import make_document
    from cuerag.text.chunking import chunk_document
    from cuerag.text.tools import TextTools

    tools = TextTools()
    text = " ".join(f"Sentence number {n} about the river Tees, which flows east." for n in range(60)) + "\n"
    doc = make_document("Tees", text)
    for max_tokens, overlap in ((1200, 100), (50, 10), (37, 0)):
        new = chunk_document(tools, doc, max_tokens=max_tokens, overlap=overlap)
        old = tools.chunk("Tees", text, max_tokens=max_tokens, overlap=overlap)
        assert [(c.index, c.text, c.tokens) for c in new] == [(c.index, c.text, c.tokens) for c in old]
        for c in new:
            assert c.place is not None and text[c.place.start : c.place.end] == c.text
            assert c.full_text == f"Tees\n{c.text}"  # no heading path: embedded as before


def test_markdown_inline_tags_join_the_front_matters(tmp_path: Path) -> None:
    (tmp_path / "standup.md").write_text(
        "---\ntags: [meetings, Work]\n---\n"
        "#draft Notes from the standup #work #project/alpha.\n\n"
        "Fixed issue #123 and read page#anchor, https://example.com/#frag; C# is no tag.\n\n"
        "```\n#not-a-tag in code\n```\n\nAnd `#nor-this` inline.\n\n## Heading #heading-tag\n"
    )
    doc = one(tmp_path / "standup.md")
    assert doc.structure.metadata["tags"] == ["meetings", "Work", "draft", "project/alpha"]  # type: ignore[attr-defined]
    assert "#draft Notes" in doc.text  # type: ignore[attr-defined]  # the text keeps them as written


def test_markdown_inline_tags_without_front_matter_and_none_at_all(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("Bought bread #kitchen #kitchen/baking #KITCHEN\n")
    (tmp_path / "b.md").write_text("# Plain\n\nNo tags here, only issue #42.\n")
    assert one(tmp_path / "a.md").structure.metadata == {"tags": ["kitchen", "kitchen/baking"]}  # type: ignore[attr-defined]
    assert one(tmp_path / "b.md").structure.metadata == {}  # type: ignore[attr-defined]
