"""How faithfully an HTML extractor keeps a page's main content and leaves its chrome out, on real
builds of documentation generators (issue 30).

    PYTHONPATH=. .venv/bin/python benchmarks/html_extraction.py NAME=FOLDER ... [--sample 40]

NAME is a generator this script knows the markup of (`sphinx`, `publican`, `mkdocs`, `doxygen`,
`sqlite`); the pages are those a folder walk indexes (artefacts left out), a seeded sample of them.

The reference for each page is the generator's own mark of its main content, read from the markup:
Sphinx's and MkDocs' `role="main"` block, Publican's body less its `#banner`, its `.docnav` lists
and its tables of contents (`.toc`, links to the sections),
Doxygen's `.header` and `.contents`, the SQLite site's body less the `.nosearch` blocks its own
search indexer leaves out. Scripts, styles and SVG drawings (diagram labels, not prose) are not
text in any of them. Both texts are bags of lower-cased words; per page:

- recall: the share of the reference's words that the extractor's text holds (multiset overlap);
- chrome: the share of the extractor's words that are not in the reference (what it kept that the
  generator marks as not content).

Printed per generator and extractor: mean recall, mean chrome, and pages with recall under 0.9.
Extractors are today's (`cuerag.ingest.formats.html`) and, where importable, trafilatura,
readability-lxml and jusText (not dependencies of the project: give them with PYTHONPATH).
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import lxml.html

from cuerag.ingest.folders import walk_paths
from cuerag.ingest.formats.html import decode_html, extract_html

_WORD = re.compile(r"\w+")
_DROP = ("script", "style", "noscript", "template", "svg")


def _words(text: str) -> Counter[str]:
    return Counter(w.lower() for w in _WORD.findall(text))


def _text_without(els: list[lxml.html.HtmlElement], chrome_xpath: str | None) -> str:
    parts = []
    for el in els:
        for bad in el.xpath(" | ".join(f".//{t}" for t in _DROP)):
            bad.drop_tree()
        if chrome_xpath:
            for bad in el.xpath(chrome_xpath):
                bad.drop_tree()
        parts.append(el.text_content())
    return "\n".join(parts)


# The generator's own mark of a page's main content: (elements holding it, chrome inside them).
REFERENCES: dict[str, tuple[str, str | None]] = {
    "sphinx": ("//*[@role='main']", None),
    "mkdocs": ("//*[@role='main']", None),
    "publican": (
        "//body",
        ".//*[@id='banner'] | .//*[contains(concat(' ', @class, ' '), ' docnav ')] | .//*[@class='toc']",
    ),
    "doxygen": ("//div[@class='header'] | //div[@class='contents']", None),
    "sqlite": ("//body", ".//*[contains(concat(' ', @class, ' '), ' nosearch ')]"),
}


def reference_text(raw: bytes, generator: str) -> str:
    text = re.sub(r"^\s*<\?xml[^>]*\?>", "", decode_html(raw, "page"))  # lxml refuses a declared encoding
    root = lxml.html.document_fromstring(text)
    where, chrome = REFERENCES[generator]
    return _text_without(root.xpath(where), chrome)


def _today(raw: bytes) -> str:
    return extract_html(raw, name="page", source="page.html").text


def extractors() -> dict[str, Callable[[bytes], str]]:
    found: dict[str, Callable[[bytes], str]] = {"today (lxml)": _today}
    try:
        import trafilatura

        found["trafilatura"] = lambda raw: trafilatura.extract(raw, include_tables=True, favor_recall=True) or ""
        found["trafilatura (precision)"] = lambda raw: trafilatura.extract(raw, include_tables=True) or ""
    except ImportError:
        print("trafilatura not importable: left out", file=sys.stderr)
    try:
        from readability import Document

        found["readability-lxml"] = lambda raw: lxml.html.fromstring(Document(raw).summary()).text_content()
    except ImportError:
        print("readability-lxml not importable: left out", file=sys.stderr)
    try:
        import justext

        stop = justext.get_stoplist("English")
        found["jusText"] = lambda raw: "\n".join(
            p.text for p in justext.justext(raw, stop, encoding="utf-8") if not p.is_boilerplate
        )
    except ImportError:
        print("jusText not importable: left out", file=sys.stderr)
    return found


def score(reference: str, extracted: str) -> tuple[float, float]:
    ref, got = _words(reference), _words(extracted)
    common = sum((ref & got).values())
    recall = common / max(sum(ref.values()), 1)
    chrome = (sum(got.values()) - common) / max(sum(got.values()), 1)
    return recall, chrome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", nargs="+", help="GENERATOR=FOLDER")
    parser.add_argument("--sample", type=int, default=40, help="pages per generator (seeded sample)")
    args = parser.parse_args()
    methods = extractors()
    print(f"{'generator':<10} {'pages':>5}  {'extractor':<24} {'recall':>7} {'chrome':>7} {'recall<0.9':>10}")
    for item in args.sets:
        generator, folder = item.split("=", 1)
        pages = [f.path for f in walk_paths([folder]).files if f.path.suffix.lower() in (".html", ".htm")]
        pages = sorted(random.Random(0).sample(pages, min(args.sample, len(pages))))
        raws = [Path(p).read_bytes() for p in pages]
        refs = [reference_text(raw, generator) for raw in raws]
        kept = [(raw, ref) for raw, ref in zip(raws, refs, strict=True) if _WORD.search(ref)]
        for name, method in methods.items():
            scores = []
            for raw, ref in kept:
                try:
                    text = method(raw)
                except Exception as exc:  # an extractor that fails on a page recovers none of it
                    print(f"  {name} failed on a page: {type(exc).__name__}: {exc}", file=sys.stderr)
                    text = ""
                scores.append(score(ref, text))
            recall = statistics.mean(r for r, _ in scores)
            chrome = statistics.mean(c for _, c in scores)
            low = sum(r < 0.9 for r, _ in scores)
            print(f"{generator:<10} {len(kept):>5}  {name:<24} {recall:>7.3f} {chrome:>7.3f} {low:>10}")


if __name__ == "__main__":
    main()
