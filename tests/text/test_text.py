"""Chunking (token windows with overlap) and sentence splitting."""

from __future__ import annotations

import math

import pytest

from cuerag.text.tools import TextTools


@pytest.fixture(scope="module")
def tools() -> TextTools:
    return TextTools()


LONG_TEXT = " ".join(f"word{i}" for i in range(700))


# ---- chunking -----------------------------------------------------------------------------------


def test_short_passage_is_one_chunk(tools: TextTools) -> None:
    text = "  Nottingham Forest won the FA Cup in 1898 and 1959.  "
    (chunk,) = tools.chunk("Forest", text, max_tokens=1200, overlap=100)
    assert chunk.index == 0
    assert chunk.text == text.strip()
    assert chunk.tokens == tools.count_tokens(text)
    assert chunk.title == "Forest"


def test_passage_exactly_at_limit_is_one_chunk(tools: TextTools) -> None:
    n = tools.count_tokens(LONG_TEXT)
    assert len(tools.chunk("T", LONG_TEXT, max_tokens=n, overlap=10)) == 1
    assert len(tools.chunk("T", LONG_TEXT, max_tokens=n - 1, overlap=10)) == 2


def test_full_text_keeps_title(tools: TextTools) -> None:
    (chunk,) = tools.chunk("Salzburg", "Salzburg lies on the Salzach.", max_tokens=100, overlap=10)
    assert chunk.full_text == "Salzburg\nSalzburg lies on the Salzach."
    (untitled,) = tools.chunk("", "Salzburg lies on the Salzach.", max_tokens=100, overlap=10)
    assert untitled.full_text == "Salzburg lies on the Salzach."


@pytest.mark.parametrize(("max_tokens", "overlap"), [(64, 16), (100, 0), (50, 49)])
def test_long_passage_windows(tools: TextTools, max_tokens: int, overlap: int) -> None:
    tokens = tools.encoding.encode(LONG_TEXT)
    n = len(tokens)
    step = max_tokens - overlap
    chunks = tools.chunk("Words", LONG_TEXT, max_tokens=max_tokens, overlap=overlap)

    assert len(chunks) == math.ceil((n - overlap) / step)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert all(c.title == "Words" for c in chunks)
    assert all(c.tokens <= max_tokens for c in chunks)
    assert all(tools.count_tokens(c.text) <= max_tokens for c in chunks)
    assert all(c.full_text.startswith("Words\n") for c in chunks)
    # Every window but the last is full.
    assert all(c.tokens == max_tokens for c in chunks[:-1])
    # The windows cover the text from its first word to its last.
    assert chunks[0].text.startswith("word0 ")
    assert chunks[-1].text.endswith("word699")
    # Consecutive windows share exactly the overlap tokens, and the windows minus what they share
    # rebuild the text (windows cut at token, not word, boundaries, so compare without spaces).
    rebuilt = chunks[0].text
    for i in range(len(chunks) - 1):
        shared = tools.encoding.decode(tokens[(i + 1) * step : i * step + max_tokens]).strip()
        if overlap == 0:
            assert shared == ""
        else:
            assert shared
            assert chunks[i].text.endswith(shared)
            assert chunks[i + 1].text.startswith(shared)
        rebuilt += chunks[i + 1].text[len(shared) :]
    assert rebuilt.replace(" ", "") == LONG_TEXT.replace(" ", "")


def test_no_overlap_windows_partition_the_text(tools: TextTools) -> None:
    chunks = tools.chunk("", LONG_TEXT, max_tokens=100, overlap=0)
    assert len(chunks) == math.ceil(tools.count_tokens(LONG_TEXT) / 100)
    assert "".join(c.text for c in chunks).replace(" ", "") == LONG_TEXT.replace(" ", "")


def test_windows_do_not_cut_characters(tools: TextTools) -> None:
    text = "Ωμέγα 🎉🎉 日本語のテキスト。" * 200
    chunks = tools.chunk("T", text, max_tokens=50, overlap=10)
    assert len(chunks) > 1
    assert not any("\ufffd" in c.text for c in chunks)


# ---- sentences ----------------------------------------------------------------------------------


def test_abbreviations_do_not_split(tools: TextTools) -> None:
    text = "Dr. Smith visited St. Maurice's Abbey in 864. He died near Orbe."
    assert tools.sentences(text) == ["Dr. Smith visited St. Maurice's Abbey in 864.", "He died near Orbe."]


def test_more_abbreviations(tools: TextTools) -> None:
    text = "Mr. Brown met Mrs. Green on Main St. in the U.S. in 1990. They talked."
    assert tools.sentences(text) == ["Mr. Brown met Mrs. Green on Main St. in the U.S. in 1990.", "They talked."]


def test_sentences_collapse_whitespace_and_join_wrapped_lines(tools: TextTools) -> None:
    text = "Vienna   is the capital\nof Austria.   It lies\n on the Danube."
    assert tools.sentences(text) == ["Vienna is the capital of Austria.", "It lies on the Danube."]


def test_punctuation_only_pieces_are_dropped(tools: TextTools) -> None:
    assert tools.sentences("First sentence. ... !!! \n\n---\n\nSecond sentence.") == [
        "First sentence.",
        "Second sentence.",
    ]


def test_markdown_headings_and_list_items_stand_alone(tools: TextTools) -> None:
    text = (
        "# Salzburg\n"
        "Salzburg is a city in Austria. It lies on the Salzach.\n"
        "## Sights\n"
        "- The old town\n"
        "* Hohensalzburg Fortress\n"
        "+ Mirabell Palace\n"
        "> A quoted line\n"
        "The cathedral is Baroque."
    )
    assert tools.sentences(text) == [
        "Salzburg",
        "Salzburg is a city in Austria.",
        "It lies on the Salzach.",
        "Sights",
        "The old town",
        "Hohensalzburg Fortress",
        "Mirabell Palace",
        "A quoted line",
        "The cathedral is Baroque.",
    ]


def test_heading_not_glued_to_next_sentence(tools: TextTools) -> None:
    sentences = tools.sentences("## Results\nThe method worked")
    assert sentences == ["Results", "The method worked"]


def test_numbered_list_items_stand_alone(tools: TextTools) -> None:
    sentences = tools.sentences("Steps:\n1. Preheat the oven\n2. Bake the bread\n")
    assert "1." not in sentences and "2." not in sentences
    assert len(sentences) == 3
    assert sentences[1].endswith("Preheat the oven")
    assert sentences[2].endswith("Bake the bread")
