"""A generated page's `<title>` is "Heading — Site name": the document's title is the heading, the
site's name that every page repeats left out; other titles stay as the page gives them."""

from __future__ import annotations

import pytest

from cuerag.ingest.formats.html import extract_html


def page(title: str, heading: str) -> bytes:
    return f"<html><head><title>{title}</title></head><body><h1>{heading}</h1><p>Text.</p></body></html>".encode()


@pytest.mark.parametrize(
    ("title", "heading", "expected"),
    [
        ("nginx &mdash; Flask Documentation (2.2.x)", "nginx", "nginx"),  # Sphinx
        ("API Reference — attrs 22.2.0 documentation", "API Reference", "API Reference"),
        ("Getting started - MkDocs", "Getting started", "Getting started"),  # MkDocs
        ("Intro | My Site", "Intro", "Intro"),  # Docusaurus
        ("Setup · Guide", "Setup", "Setup"),
        # A subtitle after a colon is the title's own; so is a title that does not start with the
        # heading, or one that only starts with its letters.
        ("SQLite Query Language: CREATE TABLE", "SQLite Query Language", "SQLite Query Language: CREATE TABLE"),
        ("git-add(1)", "git-add(1) Manual Page", "git-add(1)"),
        ("Flask — Site", "Flask Docs", "Flask — Site"),
        ("Install-guide - Site", "Install", "Install-guide - Site"),
        ("nginx", "nginx", "nginx"),
    ],
)
def test_the_site_name_after_the_heading_is_left_out_of_the_title(title: str, heading: str, expected: str) -> None:
    assert extract_html(page(title, heading), name="p.html", source="p.html").title == expected


def test_a_page_without_a_title_is_titled_by_its_heading() -> None:
    raw = b"<html><body><h1>Only a heading</h1><p>Text.</p></body></html>"
    assert extract_html(raw, name="p.html", source="p.html").title == "Only a heading"
