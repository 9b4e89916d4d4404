"""Build the git-doc retrieval benchmark corpus (pages, text, hyperlinks).

    apt-get install git-doc && python benchmarks/gitdocs/build.py OUT_DIR

Reads the HTML installed by Debian's git-doc package, selects the top-level
pages, copies them byte for byte into OUT/html/, and writes OUT/corpus.json,
OUT/links.json (links from main content) and OUT/links_all.json (whole page).
Questions are written by hand separately (questions.json, beside this script);
this script never touches them. Needs lxml (a dependency of the project).
"""

import json
import posixpath
import re
import shutil
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import lxml.html

SRC = Path("/usr/share/doc/git-doc")
OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "gitdocs-set")
MAX_CHARS = 60_000

# Site-wide navigation pages, and stubs that only say the page has moved.
NAVIGATION = {"index.html", "howto-index.html"}
STUBS = {"everyday.html", "git-tools.html", "git-remote-helpers.html"}

BLOCK = {
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "caption",
    "dd",
    "div",
    "dl",
    "dt",
    "figcaption",
    "figure",
    "footer",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
    "br",
}
DROP_TAGS = ("script", "style", "nav", "form", "noscript", "link", "meta")


def collapse(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def strip_chrome(root) -> None:
    """Remove everything that is not the page's own content."""
    for el in list(root.iter(*DROP_TAGS)):
        el.drop_tree()
    for xpath in (
        '//div[@id="footer"]',  # "Last updated" stamp
        '//div[@id="toc"]',  # asciidoc JavaScript table of contents
        '//div[contains(concat(" ", @class, " "), " toc ")]',  # docbook TOC
        '//div[contains(concat(" ", @class, " "), " navheader ")]',
        '//div[contains(concat(" ", @class, " "), " navfooter ")]',
    ):
        for el in root.xpath(xpath):
            el.drop_tree()
    # The closing "GIT / Part of the git(1) suite" section is boilerplate
    # repeated on every manual page, i.e. navigation, not content.
    for h in root.xpath('//h2[@id="_git"]'):
        sect = h.getparent()
        if sect is not None and "sect1" in (sect.get("class") or ""):
            sect.drop_tree()
    for el in root.xpath('//div[@id="footnotes"]'):
        if not collapse(el.text_content()):
            el.drop_tree()


def extract_text(root) -> str:
    lines: list[str] = []
    buf: list[str] = []

    def flush() -> None:
        line = collapse("".join(buf))
        if line:
            lines.append(line)
        buf.clear()

    def walk(el, in_pre: bool) -> None:
        tag = el.tag if isinstance(el.tag, str) else ""
        block = tag in BLOCK
        pre = in_pre or tag == "pre"
        if block:
            flush()
        if el.text:
            add(el.text, pre)
        for child in el:
            walk(child, pre)
            if child.tail:
                add(child.tail, pre)
        if block:
            flush()

    def add(s: str, pre: bool) -> None:
        if pre and "\n" in s:
            parts = s.split("\n")
            for part in parts[:-1]:
                buf.append(part)
                flush()
            buf.append(parts[-1])
        else:
            buf.append(s)

    walk(root, False)
    flush()
    return "\n".join(lines)


def page_links(root, path: str, chosen: set[str]) -> list[str]:
    found: list[str] = []
    base = posixpath.dirname(path)
    for a in root.iter("a"):
        href = a.get("href")
        if not href:
            continue
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or not parts.path:
            continue  # external link or in-page anchor
        target = posixpath.normpath(posixpath.join(base, unquote(parts.path)))
        if target == path or target not in chosen or target in found:
            continue
        found.append(target)
    return found


def parse(path: Path):
    return lxml.html.fromstring(path.read_bytes())


def main() -> None:
    if not (SRC / "git.html").is_file():
        sys.exit(f"{SRC} has no git.html: install the Debian package git-doc (apt-get install git-doc)")
    candidates = sorted(p.name for p in SRC.glob("*.html") if p.name not in NAVIGATION | STUBS)
    pages = {}
    dropped = {}
    for name in candidates:
        root = parse(SRC / name)
        title = collapse(root.findtext(".//title") or "")
        strip_chrome(root)
        text = extract_text(root.find("body") if root.find("body") is not None else root)
        if len(text) > MAX_CHARS:
            dropped[name] = len(text)
            continue
        pages[name] = (title, text)
    chosen = set(pages)

    seen: dict[str, int] = {}
    for title, _ in pages.values():
        seen[title] = seen.get(title, 0) + 1

    corpus, links, links_all = [], {}, {}
    html_out = OUT / "html"
    shutil.rmtree(html_out, ignore_errors=True)  # no page left over from an earlier build
    html_out.mkdir(parents=True)
    for name in sorted(pages):
        title, text = pages[name]
        if seen[title] > 1:
            title = f"{title} ({name})"
        corpus.append({"title": title, "text": text, "path": name})
        shutil.copyfile(SRC / name, html_out / name)
        whole = parse(SRC / name)
        links_all[name] = page_links(whole, name, chosen)
        main_root = parse(SRC / name)
        strip_chrome(main_root)
        links[name] = page_links(main_root, name, chosen)

    (OUT / "corpus.json").write_text(json.dumps(corpus, ensure_ascii=False, indent=1))
    (OUT / "links.json").write_text(json.dumps(links, indent=1))
    (OUT / "links_all.json").write_text(json.dumps(links_all, indent=1))

    sizes = sorted(len(d["text"]) for d in corpus)
    print(f"pages {len(corpus)} chars {sum(sizes)} median {sizes[len(sizes) // 2]} max {sizes[-1]}")
    print(f"links {sum(map(len, links.values()))} links_all {sum(map(len, links_all.values()))}")
    print("dropped >60k:", dropped)
    print("duplicate titles:", {t: n for t, n in seen.items() if n > 1})


if __name__ == "__main__":
    main()
