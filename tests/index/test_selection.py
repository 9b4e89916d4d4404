"""Tests for cuerag.index.knapsack: BLEU / cosine / random chunk values and the exact budgeted knapsack."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from cuerag.index.knapsack import bleu_values, cosine_values, random_values, select_chunks, tokenize_13a

CHUNKS = [
    "The Eiffel Tower is located in Paris, France.",
    "The Eiffel Tower is located in Paris, the capital of France.",
    "Paris is the capital of France and its largest city.",
    "The capital of France is Paris; the Eiffel Tower stands there.",
    "Gustave Eiffel's company designed and built the tower in 1887-1889.",
    "The tower is 330 metres (1,083 ft) tall, about the same height as an 81-storey building.",
    "Berlin is the capital of Germany.",
    "Berlin is the capital and largest city of Germany!",
    "Quantum chromodynamics describes the strong interaction.",
    'He said "the the the the" & left; cost: $3.50 - "cheap".',
    "Ok",
    "The Eiffel Tower is located in Paris, France.\nIt opened in 1889 for the World's Fair.",
]


def test_tokenize_13a_matches_sacrebleu() -> None:
    sacrebleu_tok = pytest.importorskip("sacrebleu.tokenizers.tokenizer_13a")
    tok = sacrebleu_tok.Tokenizer13a()
    extra = ["A &amp; B &lt;x&gt; &quot;q&quot;", "self-\ncontained <skipped> text", "3.14, 1,000 and 5-6 km.  "]
    for text in [*CHUNKS, *extra]:
        assert tokenize_13a(text) == tok(text.rstrip()).split()


def test_bleu_values_match_sacrebleu_sentence_bleu() -> None:
    sacrebleu = pytest.importorskip("sacrebleu")
    values = bleu_values(CHUNKS)
    assert values.shape == (len(CHUNKS),)
    for i, chunk in enumerate(CHUNKS):
        others = CHUNKS[:i] + CHUNKS[i + 1 :]
        expected = sacrebleu.sentence_bleu(chunk, others).score / 100
        assert values[i] == pytest.approx(expected, abs=1e-6), (i, chunk)
    assert values.max() > 0.5 and values.min() >= 0.0


@pytest.mark.parametrize("smooth", ["floor", "add-k", "none"])
def test_bleu_values_other_smoothing_match_sacrebleu(smooth: str) -> None:
    sacrebleu = pytest.importorskip("sacrebleu")
    values = bleu_values(CHUNKS, smooth=smooth)  # type: ignore[arg-type]
    for i, chunk in enumerate(CHUNKS):
        others = CHUNKS[:i] + CHUNKS[i + 1 :]
        expected = sacrebleu.sentence_bleu(chunk, others, smooth_method=smooth).score / 100
        assert values[i] == pytest.approx(expected, abs=1e-6), (i, chunk)


def test_bleu_values_duplicate_and_degenerate_corpora() -> None:
    # a chunk equal to another scores 1; the duplicated n-grams must not count against each other
    values = bleu_values(["a b c d e", "a b c d e", "x y"])
    assert values[0] == pytest.approx(1.0) and values[1] == pytest.approx(1.0)
    assert values[2] == 0.0
    assert bleu_values([]).shape == (0,)
    assert bleu_values(["only one chunk"]).tolist() == [0.0]


def test_cosine_values_match_naive_loop() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(9, 5))
    vectors[3] = 0.0  # a zero row has similarity 0 to everything
    got = cosine_values(vectors)
    n = len(vectors)
    for i in range(n):
        sims = []
        for j in range(n):
            if i == j:
                continue
            ni, nj = np.linalg.norm(vectors[i]), np.linalg.norm(vectors[j])
            sims.append(0.0 if ni == 0 or nj == 0 else float(vectors[i] @ vectors[j] / (ni * nj)))
        assert got[i] == pytest.approx(sum(sims) / (n - 1), abs=1e-12)
    assert cosine_values(np.ones((1, 3))).tolist() == [0.0]


def test_random_values_seeded() -> None:
    a, b = random_values(20, 3), random_values(20, 3)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, random_values(20, 4))
    assert a.shape == (20,) and ((a >= 0) & (a < 1)).all()


def _brute_force(values: list[float], weights: list[int], capacity: int) -> float:
    best = 0.0
    for mask in itertools.product((0, 1), repeat=len(values)):
        if sum(w for w, m in zip(weights, mask, strict=True) if m) <= capacity:
            best = max(best, sum(v for v, m in zip(values, mask, strict=True) if m))
    return best


def test_knapsack_equals_brute_force() -> None:
    rng = random.Random(1234)
    for _ in range(30):
        n = rng.randint(1, 12)
        values = [rng.random() for _ in range(n)]
        weights = [rng.randint(0, 20) for _ in range(n)]
        alpha = rng.choice([0.1, 0.25, 0.33, 0.5, 0.7, 0.9])
        capacity = math.ceil(alpha * sum(weights) - 1e-9)
        chosen = select_chunks(values, weights, alpha)
        assert chosen == sorted(set(chosen))
        assert sum(weights[i] for i in chosen) <= capacity
        assert sum(values[i] for i in chosen) == pytest.approx(_brute_force(values, weights, capacity), abs=1e-6)


HAND_CORPUS = [
    "the cat sat on the mat",  # every n-gram appears in chunk 1 -> BLEU 1
    "the cat sat on the mat today",  # all but "today"-grams match chunk 0
    "a dog ran in the park",  # only "the" matches
    "quantum chromodynamics describes strong interactions",  # nothing matches -> 0
]
HAND_WEIGHTS = [6, 7, 6, 5]  # total 24


def test_hand_checked_corpus_selection() -> None:
    values = bleu_values(HAND_CORPUS)
    assert values[0] == pytest.approx(1.0)
    assert values[3] == 0.0
    assert values[0] > values[1] > values[2] > values[3]
    assert select_chunks(values, HAND_WEIGHTS, 0.0) == []
    # capacity ceil(0.5 * 24) = 12: {0, 2} (weight 12) is the only way to pair chunk 0 with another
    assert select_chunks(values, HAND_WEIGHTS, 0.5) == [0, 2]
    # capacity ceil(0.55 * 24) = 14: {0, 1} (weight 13) beats {0, 2} since BLEU(1) > BLEU(2)
    assert select_chunks(values, HAND_WEIGHTS, 0.55) == [0, 1]
    # capacity ceil(0.25 * 24) = 6: only chunk 0 fits next to nothing else
    assert select_chunks(values, HAND_WEIGHTS, 0.25) == [0]
    assert select_chunks(values, HAND_WEIGHTS, 1.0) == [0, 1, 2, 3]


@pytest.mark.parametrize("alpha", [-0.1, 1.01, float("nan"), float("inf")])
def test_bad_alpha_raises(alpha: float) -> None:
    with pytest.raises(ValueError):
        select_chunks([1.0, 2.0], [1, 1], alpha)


def test_bad_weights_raise() -> None:
    with pytest.raises(ValueError):
        select_chunks([1.0, 2.0], [1, -1], 0.5)
    with pytest.raises(ValueError):
        select_chunks([1.0, 2.0], [1], 0.5)
    with pytest.raises(ValueError):
        select_chunks([1.0, 2.0], [1, 1.5], 0.5)  # type: ignore[list-item]
