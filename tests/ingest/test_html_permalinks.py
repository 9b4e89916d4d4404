"""Permalink marks that site generators put beside headings and definitions (Sphinx's `¶`, `#` and
`§` anchors, empty icon anchors) are not text: they stay out of heading paths and of the body
(issue 30)."""

from __future__ import annotations

from cuerag.ingest.formats.html import extract_html

SPHINX = """<html><body><div role="main">
<section id="getting-started"><h1>Getting started<a class="headerlink" href="#getting-started"
 title="Permalink to this heading">¶</a></h1>
<p>Sphinx builds documentation.</p>
<section id="setup"><h2>Setting up<a class="headerlink" href="#setup">&para;</a></h2>
<dl class="py function"><dt id="build"><span>build(path)</span><a class="headerlink" href="#build"
 title="Permalink to this definition">¶</a></dt><dd><p>Builds the pages.</p></dd></dl>
</section></section>
<h2 id="hugo"><a class="anchor" href="#hugo">#</a> Hugo style</h2><p>Anchor first.</p>
<h2 id="gh">GitHub style<a class="anchor" aria-hidden="true" href="#gh"><svg></svg></a></h2><p>Icon.</p>
<h2 id="sec">Section sign<a href="#sec">§</a></h2><p>Plain anchor.</p>
<h2 id="kept">A <a href="#kept">linked</a> heading</h2><p>An anchor with words is text.</p>
</div></body></html>"""


def test_permalink_marks_are_stripped_from_headings_and_text() -> None:
    found = extract_html(SPHINX.encode(), name="page.html", source="page.html")
    assert found.structure is not None
    headings = [s.path[-1] for s in found.structure.sections if s.path]
    assert headings == [
        "Getting started",
        "Setting up",
        "Hugo style",
        "GitHub style",
        "Section sign",
        "A linked heading",
    ]
    assert found.title == "Getting started"
    assert "build(path)" in found.text
    for mark in ("¶", "§", "# Hugo"):
        assert mark not in found.text


# The Read the Docs theme (Debian's python-attr-doc): Sphinx's `headerlink` anchors hold the Font
# Awesome link glyph U+F0C1, a private-use character, instead of `¶`.
READ_THE_DOCS = """<html><head><title>API Reference &mdash; attrs 22.2.0 documentation</title></head>
<body><div role="main" class="document"><section id="api-reference">
<h1>API Reference<a class="headerlink" href="#api-reference" title="Permalink to this heading">\uf0c1</a></h1>
<p>What <code>attrs</code> offers.</p>
<dl class="py function"><dt class="sig sig-object py" id="attrs.define"><span>attrs.define()</span>
<a class="headerlink" href="#attrs.define" title="Permalink to this definition">Link</a></dt>
<dd><p>Define a class.\ue001</p></dd></dl>
<section id="core"><h2><span class="fa fa-link">\uf0c1</span> Core</h2><p>The core API.</p></section>
</section></div></body></html>"""


def test_sphinx_headerlinks_and_private_use_glyphs_are_not_text() -> None:
    found = extract_html(READ_THE_DOCS.encode(), name="api.html", source="api.html")
    assert found.structure is not None
    assert [s.path for s in found.structure.sections if s.path] == [["API Reference"], ["API Reference", "Core"]]
    assert "attrs.define()" in found.text
    assert "Define a class." in found.text
    assert "Link" not in found.text  # a headerlink is dropped whatever it shows
    assert not any(0xE000 <= ord(c) <= 0xF8FF for c in found.text + (found.title or ""))
