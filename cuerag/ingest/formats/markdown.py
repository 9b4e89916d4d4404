"""Markdown (markdown-it-py, CommonMark with tables; YAML front matter through mdit-py-plugins and
PyYAML): the text as a reader sees it (no `#`, `*` or link syntax), headings as sections, the front
matter as metadata (its `title` the document's title; the text's inline `#tags` added to its `tags`),
`[text](path)` links and `[[wikilinks]]`."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

from cuerag.errors import InputError, first_line
from cuerag.ingest.formats.builder import TextBuilder
from cuerag.ingest.formats.model import DocumentStructure, Extracted
from cuerag.ingest.formats.reading import decode_text
from cuerag.ingest.formats.tags import inline_tags, with_inline_tags
from cuerag.ingest.formats.targets import resolve_target

# [[Target]], [[Target|shown text]], [[Target#Heading]]
_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]+)(?:#[^\[\]|\n]*)?(?:\|([^\[\]\n]+))?\]\]")
_TAG = re.compile(r"<[^>]*>")


# markdown-it stops reading a block nested this deep and silently drops the rest of the file
# (its CommonMark preset stops at 20, which a real nested list can pass); past this, the file is
# refused rather than indexed in part.
MAX_MARKDOWN_NESTING = 100


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"maxNesting": MAX_MARKDOWN_NESTING}).enable("table").use(front_matter_plugin)


def _cut_short(tokens: list[Token]) -> bool:
    """Whether the parse reached the nesting limit, where markdown-it drops what follows."""
    return any(
        t.level >= MAX_MARKDOWN_NESTING - 1 or any(c.level >= MAX_MARKDOWN_NESTING - 1 for c in t.children or [])
        for t in tokens
    )


def extract_markdown(raw: bytes, *, name: str, source: str | None) -> Extracted:
    text = decode_text(raw, name)
    try:
        tokens = _parser().parse(text)
    except RecursionError:
        raise InputError(f"{name}: Markdown nested too deeply to read") from None
    if _cut_short(tokens):
        raise InputError(
            f"{name}: Markdown nested over {MAX_MARKDOWN_NESTING} levels deep; the reader would drop the rest"
        )
    out = TextBuilder()
    metadata: dict[str, Any] = {}
    tags: list[str] = []  # the inline #tags of the running text
    first_heading: str | None = None
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "front_matter":
            metadata = _front_matter(tok.content, name)
        elif tok.type == "heading_open":
            inline = tokens[i + 1]
            title = _plain(inline.children or [])
            # Only a level-1 heading names the document: the first "## Benchmarks" of a README
            # whose top heading is an image is a section, and as a title it would be matched
            # wherever the word is written. Without one, the file's name is the title.
            if first_heading is None and tok.tag == "h1" and title.strip():
                first_heading = title.strip()
            out.heading(int(tok.tag[1]), title)
            i += 3  # heading_open, inline, heading_close
            continue
        elif tok.type == "inline":
            _inline(out, tok.children or [], source, tags)
        elif tok.type in ("fence", "code_block"):
            out.block()
            out.raw(tok.content.rstrip("\n"))
            out.block()
        elif tok.type == "html_block":
            out.block()
            out.inline(_TAG.sub(" ", tok.content))
            out.block()
        elif tok.type in ("th_open", "td_open"):
            out.inline("" if tokens[i - 1].type == "tr_open" else " | ")
        elif (tok.type.endswith(("_open", "_close")) or tok.type == "hr") and tok.type not in (
            "th_close",
            "td_close",  # the cells of a row stay on its line
        ):
            out.block()
        i += 1
    body, sections, links = out.finish()
    for link in links:
        if not link.wiki:
            link.doc_id = resolve_target(link.target, source)
    metadata = with_inline_tags(metadata, tags)
    given = metadata.get("title")
    return Extracted(
        title=(given if isinstance(given, str) and given.strip() else first_heading),
        text=body,
        structure=DocumentStructure(sections=sections, links=links, metadata=metadata, format="markdown"),
    )


# Front matter is a few fields of metadata; deeper nesting is refused before it is built.
MAX_FRONT_MATTER_DEPTH = 20


class _FrontMatterLoader(yaml.SafeLoader):
    """PyYAML's safe loader without aliases and with a depth limit: an alias repeats a node, and
    a few hundred bytes of aliases of aliases ("billion laughs") build millions of items, which
    would then be stored and returned as the document's metadata."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise InputError("aliases (*name) are not accepted in front matter")
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_FRONT_MATTER_DEPTH:
                raise InputError(f"nested deeper than {MAX_FRONT_MATTER_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _front_matter(content: str, name: str) -> dict[str, Any]:
    try:
        data = yaml.load(content, Loader=_FrontMatterLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise InputError(f"{name}: the YAML front matter is not valid YAML ({first_line(exc)})") from None
    except InputError as exc:
        raise InputError(f"{name}: the YAML front matter is refused: {exc}") from None
    except RecursionError:
        raise InputError(f"{name}: the YAML front matter is nested too deeply to read") from None
    if not isinstance(data, dict):
        return {}
    return {str(k): _json_safe(v) for k, v in data.items()}


def _json_safe(value: Any) -> Any:
    """Front matter as JSON can hold it (YAML dates and the like become strings)."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    return str(value)


def _plain(children: list[Token]) -> str:
    return "".join(c.content for c in children if c.type in ("text", "code_inline")) or "".join(
        c.content for c in children
    )


def _inline(out: TextBuilder, children: list[Token], source: str | None, tags: list[str]) -> None:
    """One paragraph's inline tokens: text, code, breaks, links (their anchor text kept), images
    (their alt text); the `#tags` of its text are added to `tags`."""
    open_links: list[tuple[str, int]] = []
    text_run: list[str] = []

    def flush() -> None:
        # Adjacent text tokens are joined first: markdown-it may split "[[Page]]" at the brackets.
        if text_run:
            joined = "".join(text_run)
            tags.extend(inline_tags(joined))
            _text_with_wikilinks(out, joined)
            text_run.clear()

    for child in children:
        if child.type == "text":
            text_run.append(child.content)
            continue
        flush()
        if child.type == "code_inline":
            out.inline(child.content)
        elif child.type == "softbreak":
            out.inline(" ")
        elif child.type == "hardbreak":
            out.line_break()
        elif child.type == "link_open":
            open_links.append((str(child.attrGet("href") or ""), out.pos))
        elif child.type == "link_close" and open_links:
            href, start = open_links.pop()
            out.link(href, start)
        elif child.type == "image":
            out.inline(_plain(child.children or []))
    flush()


def _text_with_wikilinks(out: TextBuilder, text: str) -> None:
    at = 0
    for m in _WIKILINK.finditer(text):
        out.inline(text[at : m.start()])
        start = out.pos
        out.inline((m.group(2) or m.group(1)).strip())
        out.link(m.group(1).strip(), start, wiki=True)
        at = m.end()
    out.inline(text[at:])
