"""HTML (lxml): the page's main content without its navigation chrome, the `<title>`, headings as
sections and `<a href>` links with their anchor text.

The main content is `<main>` (or `role=main`, or a single `<article>`) when the page marks it,
else the body; either way scripts, styles, forms, navigation, page headers and footers, hidden
elements and blocks whose class or id names them as chrome (menus, tables of contents, sidebars,
breadcrumbs) are left out. The encoding is the one the file declares (byte-order mark, or a
`<meta charset>`), else UTF-8; a file that is neither is refused rather than guessed at.
"""

from __future__ import annotations

import codecs
import re
from copy import deepcopy as copy_element

import lxml.etree
import lxml.html

from cuerag.errors import InputError
from cuerag.ingest.formats.builder import TextBuilder
from cuerag.ingest.formats.model import DocumentStructure, Extracted
from cuerag.ingest.formats.reading import decode_text
from cuerag.ingest.formats.targets import resolve_target

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_DROP_TAGS = {"script", "style", "noscript", "template", "svg", "math", "nav", "form", "button", "select"}
_DROP_TAGS |= {"iframe", "object", "embed", "canvas", "head", "aside"}
_PAGE_CHROME_TAGS = {"header", "footer"}  # chrome at page level; an article's own header stays
_DROP_ROLES = {"navigation", "banner", "contentinfo", "search", "complementary", "menu", "menubar"}
# Words in a class or id that name navigation chrome (split at '-', '_' and spaces); a word that
# starts or ends with "nav" does too (Publican's `docnav`, DocBook's `navheader`, `sidenav`).
_CHROME_WORDS = {"menu", "menubar", "submenu", "searchmenu", "toc", "banner"}
_CHROME_WORDS |= {"breadcrumb", "breadcrumbs", "footer", "masthead", "skiplink", "tagline", "topbar", "pager"}
_NAV_WORD = re.compile(r"^nav|nav$")
# A "sidebar" is a site's side navigation in most themes but a boxed aside of prose in DocBook
# (Publican's "BACK TO BASICS" and "NOTE" boxes): it is chrome only when links make up at least
# this share of its text. Dropping them all lost 26% of the Debian handbook's words
# (benchmarks/html_extraction.py, docs/formats.md).
_SIDEBAR_LINK_SHARE = 0.5
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_BLOCK_TAGS = {"p", "div", "section", "article", "main", "blockquote", "ul", "ol", "li", "dl", "dt", "dd"}
_BLOCK_TAGS |= {"table", "thead", "tbody", "tfoot", "tr", "figure", "figcaption", "hr", "address", "details"}
_BLOCK_TAGS |= {"summary", "center", "fieldset", "caption", "header", "footer", "body", "html"}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_WORD_SPLIT = re.compile(r"[-_\s]+")
# What a permalink anchor beside a heading or a definition shows (Sphinx and MkDocs `¶`, Hugo and
# Docusaurus `#`, `§`, an icon with no text): a mark to click, not words of the page, and a
# heading path "Getting started¶" would neither read nor match as the heading it is.
_PERMALINK_MARKS = {"", "¶", "§", "#", "🔗", "⚓"}
# Sphinx's class for its permalink anchors: themes fill them with an icon-font glyph (Read the
# Docs' U+F0C1) rather than `¶`, so the class, not the text, says what they are.
_PERMALINK_CLASS = "headerlink"
# Unicode's private-use areas (category Co, exactly these ranges): code points with no agreed
# meaning, which pages use for icon-font glyphs; in text they are noise that no query can match.
_PRIVATE_USE = re.compile("[\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]")
# What a site generator puts between a page's heading and the site's name in `<title>`: Sphinx
# "nginx — Flask Documentation (2.2.x)", MkDocs "Install - MkDocs", Docusaurus "Intro | Site",
# "·". Not ":", which joins a title to its subtitle ("SQLite Query Language: CREATE TABLE").
_SITE_SEPARATOR = re.compile(r"\s+[—–|·-]\s+\S")


def decode_html(raw: bytes, name: str) -> str:
    """The page as text in the encoding it declares (BOM, then `<meta charset>`), else UTF-8."""
    declared: str | None = None
    if raw.startswith(codecs.BOM_UTF8):
        declared = "utf-8-sig"
    elif raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        declared = "utf-16"
    else:
        m = _META_CHARSET.search(raw[:4096])
        if m:
            label = m.group(1).decode("ascii", "replace")
            try:
                declared = codecs.lookup(label).name
            except LookupError:
                raise InputError(f"{name}: declares the unknown charset {label!r}; convert it to UTF-8") from None
    if declared is None or declared in ("utf-8", "utf-8-sig"):
        try:
            return decode_text(raw, name)
        except InputError as exc:
            if "UTF-8" not in str(exc):
                raise
            raise InputError(
                f"{name}: HTML that is not UTF-8 and declares no charset (a legacy encoding?); add "
                '<meta charset="..."> or convert it to UTF-8'
            ) from None
    try:
        text = raw.decode(declared)
    except UnicodeDecodeError as exc:
        problem = f"{name}: declares charset {declared} but byte {exc.start} is not valid {declared}"
    else:
        if text.strip():
            return text
        problem = f"file holds only whitespace: {name}"
    raise InputError(problem)


def _is_chrome(el: lxml.html.HtmlElement) -> bool:
    if el.get("hidden") is not None or el.get("aria-hidden") == "true":
        return True
    if _HIDDEN_STYLE.search(el.get("style", "")):
        return True
    if el.get("role", "").lower() in _DROP_ROLES:
        return True
    words = set(_WORD_SPLIT.split(f"{el.get('class', '')} {el.get('id', '')}".lower()))
    if words & _CHROME_WORDS or any(_NAV_WORD.search(w) for w in words):
        return True
    return "sidebar" in words and _link_share(el) >= _SIDEBAR_LINK_SHARE


def _link_share(el: lxml.html.HtmlElement) -> float:
    """The share of an element's text that is the text of its links."""
    total = len("".join(el.text_content().split()))
    linked = sum(len("".join(a.text_content().split())) for a in el.iter("a"))
    return linked / total if total else 1.0


def _main_of(root: lxml.html.HtmlElement) -> tuple[lxml.html.HtmlElement, bool]:
    """The element holding the main content, and whether the page marked it as such."""
    for path in ("//main", "//*[@role='main']"):
        found = root.xpath(path)
        if len(found) == 1:
            return found[0], True
    articles = root.xpath("//article")
    if len(articles) == 1:
        return articles[0], True
    body = root.find("body")
    return (body if body is not None else root), False


def extract_html(raw: bytes, *, name: str, source: str | None) -> Extracted:
    text = decode_html(raw, name)
    text = re.sub(r"^\s*<\?xml[^>]*\?>", "", text)  # lxml refuses a str that declares an encoding
    text = _PRIVATE_USE.sub("", text)
    try:
        # huge_tree: without it libxml2 stops at 256 levels of nesting or a 10 MB text node and
        # silently drops the rest of the page; the file's size is capped before it is read, and
        # nesting the text walk cannot follow is refused below.
        root = lxml.html.document_fromstring(text, parser=lxml.html.HTMLParser(huge_tree=True))
    except (lxml.etree.ParserError, ValueError) as exc:
        raise InputError(f"{name}: not readable as HTML ({exc})") from None
    title_el = root.find(".//title")
    title = " ".join(title_el.text_content().split()) if title_el is not None else ""
    main, marked = _main_of(root)
    out = TextBuilder()
    try:
        if main.text:
            out.inline(main.text)
        _walk(out, main, top=not marked)
    except RecursionError:
        raise InputError(f"{name}: HTML nested too deeply to read") from None
    body, sections, links = out.finish()
    if not body.strip():
        raise InputError(f"{name}: the page holds no text (is it a frameset, an image or a script-only page?)")
    for link in links:
        link.doc_id = resolve_target(link.target, source)
    first_heading = next((s.path[-1] for s in sections if s.path), None)
    return Extracted(
        title=_without_site_name(title, first_heading) or first_heading,
        text=body,
        structure=DocumentStructure(sections=sections, links=links, format="html"),
    )


def _without_site_name(title: str, heading: str | None) -> str:
    """The page's own title: its `<title>` less a site name after the page's first heading.

    Generated sites title every page "Heading — Site name (version)"; kept, the site's name is in
    every document's title and title entity, so a question naming "nginx" matched every page's
    title words and each hit's citation, path and link repeated "— Flask Documentation (2.2.x)"
    (Debian python-flask-doc). Only a title that is the heading, a separator and more is cut.
    """
    if heading and title.startswith(heading) and _SITE_SEPARATOR.match(title, len(heading)):
        return heading
    return title


def _walk(out: TextBuilder, el: lxml.html.HtmlElement, *, top: bool) -> None:
    """Write an element's text, then its children's, each followed by its tail."""
    for child in el:
        tag = child.tag if isinstance(child.tag, str) else None  # comments, processing instructions
        if tag is not None and _keep(child, tag.lower(), top):
            _element(out, child, tag.lower(), top)
        if child.tail:
            out.inline(child.tail)


def _keep(el: lxml.html.HtmlElement, tag: str, top: bool) -> bool:
    if tag in _DROP_TAGS or (top and tag in _PAGE_CHROME_TAGS):
        return False
    if tag == "a" and _is_permalink(el):
        return False
    return not _is_chrome(el)


def _is_permalink(el: lxml.html.HtmlElement) -> bool:
    """An in-page anchor that shows only a permalink mark (`_PERMALINK_MARKS`), or one Sphinx marks
    as its permalink (`_PERMALINK_CLASS`) whatever it shows."""
    if _PERMALINK_CLASS in el.get("class", "").split():
        return True
    return el.get("href", "").startswith("#") and el.text_content().strip() in _PERMALINK_MARKS


def _heading_text(el: lxml.html.HtmlElement) -> str:
    """A heading's text without the permalink marks in it (their tails kept)."""
    if not any(_is_permalink(a) for a in el.iter("a")):
        return str(el.text_content())
    copy = copy_element(el)
    for a in [a for a in copy.iter("a") if _is_permalink(a)]:
        a.drop_tree()  # keeps the anchor's tail, the words after it
    return str(copy.text_content())


def _element(out: TextBuilder, el: lxml.html.HtmlElement, tag: str, top: bool) -> None:
    if tag in _HEADINGS:
        out.heading(_HEADINGS[tag], _heading_text(el))
        return
    if tag == "pre":
        out.block()
        out.raw(el.text_content().strip("\n"))
        out.block()
        return
    if tag == "br":
        out.line_break()
        return
    if tag in ("td", "th") and el.getprevious() is not None:
        out.inline(" | ")
    block = tag in _BLOCK_TAGS
    if block:
        out.block()
    start = out.pos
    if el.text:
        out.inline(el.text)
    _walk(out, el, top=top and tag in ("body", "div", "html"))
    if tag == "a" and el.get("href"):
        out.link(el.get("href"), start)
    if block:
        out.block()
