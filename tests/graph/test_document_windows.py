"""A window around a chunk stays within `max_chars` (the bound that keeps a read_document result
under the clients' limits), and reading a long paged document costs time linear in its chunks."""

from __future__ import annotations

import time
from typing import Any, cast

import pytest

from cuerag.errors import ParameterError
from cuerag.graph.document_text import WORD_BACKUP, read_document
from cuerag.graph.snapshot import Graph


class _Graph:
    """The parts of a snapshot read_document reads: one document of `n` chunks of `size` characters."""

    def __init__(self, n: int, size: int = 100) -> None:
        self.chunk_docs = ["d"] * n
        self.chunk_ids = [f"c{i}" for i in range(n)]
        self.chunk_pos = {c: i for i, c in enumerate(self.chunk_ids)}
        self.chunk_texts = ["w" * (size - 1) + " " for _ in range(n)]
        self.chunk_titles = ["t"] * n
        self._payloads = [
            {"start": i * size, "end": (i + 1) * size, "doc_id": "d", "pages": [i // 3 + 1], "section": []}
            for i in range(n)
        ]

    def doc_chunks(self) -> dict[str, list[int]]:
        return {"d": list(range(len(self.chunk_docs)))}

    def chunk_payload(self, c: int) -> dict[str, Any]:
        return self._payloads[c]


def test_a_window_around_a_chunk_keeps_within_max_chars() -> None:
    graph = cast(Graph, _Graph(1_000, size=100))
    window = read_document(graph, chunk_id="c600", context=50_000, max_chars=2_000)
    assert len(window.text) <= 2_000 + WORD_BACKUP, len(window.text)
    assert graph.chunk_texts[600] in window.text and window.start < 600 * 100
    # A chunk longer than max_chars still comes whole, with no context before it.
    alone = read_document(graph, chunk_id="c600", context=50_000, max_chars=1)
    assert alone.text == graph.chunk_texts[600]


def test_reading_a_long_paged_document_is_linear_in_its_chunks() -> None:
    graph = cast(Graph, _Graph(20_000))
    began = time.perf_counter()
    window = read_document(graph, doc_id="d", max_chars=10)
    assert time.perf_counter() - began < 2.0  # quadratic: about 4 s here
    assert window.pages == [1]


@pytest.mark.parametrize(("max_chars", "context"), [(0, 10), (-1, 10), (100, -300)])
def test_a_window_of_no_characters_or_negative_context_is_refused(max_chars: int, context: int) -> None:
    """Negative max_chars sliced text[0:-1] (the whole document, end -1); negative context gave a
    window that missed its chunk. The MCP schema refused them; the CLI and the library did not."""
    graph = cast(Graph, _Graph(10))
    with pytest.raises(ParameterError, match="must be"):
        read_document(graph, doc_id="d", max_chars=max_chars, context=context)
    with pytest.raises(ParameterError, match="must be"):
        read_document(graph, chunk_id="c5", max_chars=max_chars, context=context)


def test_a_path_one_folder_off_is_answered_with_the_id_it_names() -> None:
    """An index report lists files as walked ("docs/api.html"), ids are relative to the indexed
    folder ("api.html"): the refusal says which id the path names."""
    graph = _Graph(3)
    graph.chunk_docs = ["guide/api.html"] * 3
    graph.doc_chunks = lambda: {"guide/api.html": [0, 1, 2], "api.html.bak": []}  # type: ignore[method-assign]
    for given in ("docs/guide/api.html", "api.html"):
        with pytest.raises(ParameterError, match=r"did you mean 'guide/api.html'\?"):
            read_document(cast(Graph, graph), doc_id=given)
    with pytest.raises(ParameterError) as unrelated:
        read_document(cast(Graph, graph), doc_id="other.html")
    assert "did you mean" not in str(unrelated.value)
