"""Indexed text printed with markup off (a document read back, a theme's report) reaches the
terminal with its control characters made visible: an escape sequence in a document must not
retitle the window or write the clipboard (OSC 52)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

import cuerag.cli.app
import cuerag.cli.query_commands
import cuerag.cli.theme_commands
from cuerag.communities.browse import ThemeDetail, ThemeListing
from cuerag.graph.document_text import DocumentText

HOSTILE = "before\x1b]52;c;ZXZpbA==\x07after\x1b]0;PWNED\x07\nsecond line\tok"


def test_cli_read_shows_a_documents_escape_sequences_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = DocumentText(doc_id="d", title="t\x1b[2J", source="s.md", text=HOSTILE, start=0, end=10, total_chars=10)
    engine = SimpleNamespace(read_document=lambda *a, **k: doc)
    monkeypatch.setattr(cuerag.cli.query_commands, "_engine", lambda ctx: engine)
    shown = CliRunner().invoke(cuerag.cli.app.app, ["read", "-c", "notes", "d"]).output
    assert "\x1b" not in shown and "\x07" not in shown, repr(shown)
    assert "before\\x1b]52;c;ZXZpbA==\\x07after" in shown and "\nsecond line" in shown, repr(shown)


def test_cli_themes_show_a_themes_escape_sequences_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    theme = ThemeDetail(
        theme_id="0-1",
        level=0,
        title="title\x1b]0;x\x07",
        summary=HOSTILE,
        entities=["e\x1b[31m"],
        evidence=[],
        documents=["doc\x1b[8m"],
        documents_total=1,
        terms=[],
        parent=None,
    )
    listing = ThemeListing(corpus="notes", theme=theme, themes=[], total=0, levels=1)
    engine = SimpleNamespace(themes=lambda *a, **k: listing)
    monkeypatch.setattr(cuerag.cli.theme_commands, "_engine", lambda ctx: engine)
    shown = CliRunner().invoke(cuerag.cli.app.app, ["themes", "-c", "notes", "--theme", "0-1"]).output
    assert "\x1b" not in shown and "\x07" not in shown, repr(shown)
    assert "title\\x1b]0;x\\x07" in shown and "doc\\x1b[8m" in shown, repr(shown)
