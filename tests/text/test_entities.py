"""Entity identity: which mentions become the same entity node."""

from __future__ import annotations

import pytest

from cuerag.graph.ids import chunk_point_id, entity_point_id, unit_point_id
from cuerag.text.entities import name_span, normalize_entity

SAME = [
    ("Lothair II", ["Lothair II's", "lothair ii", "LOTHAIR II", "Lothair II\u2019s", "Lothair II'", " Lothair  II "]),
    ("The European Cup", ["European Cup", "the european cup", "THE EUROPEAN CUP", "European Cup's"]),
    ("Zürich", ["Zurich", "ZÜRICH", "Zu\u0308rich"]),  # composed, plain and decomposed spellings
    ("São Paulo", ["Sao Paulo", "são paulo"]),
    ("Henri Becquerel", ["Henri Bécquerel", "henri becquerel's"]),
    ("1979-80", ["1979 80", "1979\u201380"]),  # hyphen, space, en dash
    ("St. Maurice's Abbey", ["St Maurice Abbey", "st. maurice's abbey"]),
]


@pytest.mark.parametrize(("canonical", "variants"), SAME, ids=[s[0] for s in SAME])
def test_variants_normalise_alike(canonical: str, variants: list[str]) -> None:
    expected = normalize_entity(canonical)
    assert expected
    for variant in variants:
        assert normalize_entity(variant) == expected, variant


@pytest.mark.parametrize(("canonical", "variants"), SAME, ids=[s[0] for s in SAME])
def test_variants_share_one_point_id(canonical: str, variants: list[str]) -> None:
    expected = entity_point_id(canonical)
    assert all(entity_point_id(v) == expected for v in variants)


@pytest.mark.parametrize(
    ("name", "normalised"),
    [
        ("Lothair II's", "lothair ii"),
        ("The European Cup", "european cup"),
        ("Zürich", "zurich"),
        ("1979-80", "1979 80"),
        ("F.C. Barcelona", "f c barcelona"),
        ("Thebes", "thebes"),  # an article is a whole word, not a prefix
        ("Theodoric the Great", "theodoric the great"),  # only a leading article goes
        ("An Post", "post"),
    ],
)
def test_normal_forms(name: str, normalised: str) -> None:
    assert normalize_entity(name) == normalised


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Lothair I", "Lothair II"),
        ("Nottingham Forest", "Nottingham"),
        ("FA Cup", "European Cup"),
        ("1979-80", "1980"),
    ],
)
def test_different_entities_stay_different(a: str, b: str) -> None:
    assert normalize_entity(a) != normalize_entity(b)
    assert entity_point_id(a) != entity_point_id(b)


def test_punctuation_only_mention_normalises_to_empty() -> None:
    # The indexer skips mentions whose normal form is empty.
    assert normalize_entity("'s") == ""
    assert normalize_entity("--") == ""


def test_point_ids_are_uuids_and_kinds_do_not_collide() -> None:
    import uuid

    text = "Nottingham Forest"
    ids = {entity_point_id(text), unit_point_id(text), chunk_point_id("d", 0, text)}
    assert len(ids) == 3
    for id_ in ids:
        assert str(uuid.UUID(id_)) == id_
    assert unit_point_id(text) == unit_point_id(text)
    assert unit_point_id(text) != unit_point_id(text + ".")
    assert chunk_point_id("d", 0, text) != chunk_point_id("d", 1, text)
    assert chunk_point_id("d", 0, text) != chunk_point_id("e", 0, text)


@pytest.mark.parametrize(
    ("text", "start", "end", "name"),
    [
        ("the chief executive of Corvane Labs for ten years", 4, 7, "Corvane Labs"),  # ran into "for"
        ("they sang Let It Be at the end", 2, 5, "Let It Be"),  # a capitalised function word stays
        ("the Bank of America said", 1, 4, "Bank of America"),  # inside the name, it stays
        ("in the Republic of the Congo", 2, 5, "Republic"),  # cut short by the model: its edge goes
        ('he said "Halvard Optics" twice', 2, 6, "Halvard Optics"),  # quotes at both edges
        ("just for", 1, 2, "for"),  # nothing but the edge: one token is kept
    ],
)
def test_a_span_loses_the_tokens_at_its_edges_that_are_not_part_of_the_name(
    text: str, start: int, end: int, name: str
) -> None:
    import spacy
    from spacy.tokens import Span

    doc = spacy.blank("en")(text)
    assert name_span(Span(doc, start, end, label="ORG")).text == name
