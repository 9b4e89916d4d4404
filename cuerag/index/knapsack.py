"""Chunk valuation and budgeted selection for CUE-RAG's hybrid extraction.

Hybrid extraction lets an LLM rewrite only some chunks under a token budget ``alpha`` in ``[0, 1]``.
Each chunk gets a *value* and the chosen set is the exact optimum of a 0-1 knapsack:

* weight of a chunk = its token count,
* capacity = ``ceil(alpha * sum(weights))``,
* objective = maximise the total value of the chosen chunks.

Three valuations are provided:

* :func:`bleu_values` - sentence BLEU of a chunk (hypothesis) against *all other* chunks (references),
  computed in near-linear time from corpus-wide n-gram statistics; numerically equal to
  ``sacrebleu.sentence_bleu(chunk, others).score / 100`` (sacrebleu is *not* needed at runtime);
* :func:`cosine_values` - mean cosine similarity of a chunk's embedding to all other embeddings;
* :func:`random_values` - a seeded random baseline.

:func:`select_chunks` solves the knapsack exactly with OR-Tools.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence
from typing import Literal

import numpy as np

__all__ = [
    "PROFIT_SCALE",
    "SmoothMethod",
    "bleu_values",
    "cosine_values",
    "random_values",
    "select_chunks",
    "tokenize_13a",
]

SmoothMethod = Literal["exp", "floor", "add-k", "none"]

#: Default smoothing values of sacrebleu's ``BLEU.SMOOTH_DEFAULTS`` (Chen & Cherry, WMT 2014).
_SMOOTH_DEFAULTS: dict[str, float | None] = {"none": None, "floor": 0.1, "add-k": 1.0, "exp": None}

#: sacrebleu's ``my_log(0)`` floor.
_LOG_ZERO = -9999999999.0

#: Values are scaled to integer profits in ``[0, PROFIT_SCALE]`` relative to the largest value.
PROFIT_SCALE = 10**9

# The regular expressions of sacrebleu's ``TokenizerRegexp`` (the language-dependent part of ``13a``).
_13A_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # punctuation and symbols: { | } ~ [ \ ] ^ _ ` space ! " # $ % & ( ) * + : ; < = > ? @ /
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    # period and comma unless preceded by a digit
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    # period and comma unless followed by a digit
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    # dash when preceded by a digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
)


def tokenize_13a(text: str) -> list[str]:
    """Tokenise ``text`` exactly like sacrebleu's default ``13a`` tokenizer (mteval-v13a) does for BLEU.

    Steps, in order (the input is first right-stripped, as sacrebleu's ``BLEU._preprocess_segment`` does):

    1. remove ``<skipped>``, join ``-\\n`` hyphenations, turn newlines into spaces;
    2. unescape ``&quot;``, ``&amp;``, ``&lt;``, ``&gt;``;
    3. pad the line with a space on both sides and put spaces around every ASCII symbol in
       ``{|}~[\\]^_`!"#$%&()*+:;<=>?@/`` (and space), around ``.`` and ``,`` unless they sit between digits,
       and after ``-`` when it follows a digit;
    4. split on whitespace.

    Case is kept (sacrebleu's ``lowercase=False`` default).
    """
    line = text.rstrip()
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    line = f" {line} "
    for pattern, repl in _13A_RULES:
        line = pattern.sub(repl, line)
    return line.split()


def _ngram_counts(tokens: Sequence[str], max_order: int) -> Counter[tuple[str, ...]]:
    """All n-grams of ``tokens`` for ``n = 1..max_order`` with their counts."""
    return Counter(tuple(tokens[i : i + n]) for n in range(1, max_order + 1) for i in range(len(tokens) - n + 1))


def _closest_other_length(sorted_lengths: Sequence[int], own: int) -> int:
    """Closest value to ``own`` among ``sorted_lengths`` with one copy of ``own`` removed (ties: the shorter).

    This is sacrebleu's ``_get_closest_ref_len`` over the *other* chunks' lengths; ``sorted_lengths`` holds
    every chunk's length (including this one's), at least two of them.
    """
    left = bisect_left(sorted_lengths, own)
    right = bisect_right(sorted_lengths, own)
    if right - left >= 2:  # another chunk has exactly the same length
        return own
    below = sorted_lengths[left - 1] if left > 0 else None
    above = sorted_lengths[right] if right < len(sorted_lengths) else None
    if below is None:
        assert above is not None
        return above
    if above is None or own - below <= above - own:
        return below
    return above


def _sentence_bleu(
    correct: list[float],
    total: list[float],
    sys_len: int,
    ref_len: int,
    *,
    smooth: SmoothMethod,
    smooth_value: float | None,
    effective_order: bool,
) -> float:
    """sacrebleu's ``BLEU.compute_bleu`` on one segment's sufficient statistics, scaled to ``[0, 1]``."""
    if smooth_value is None:
        smooth_value = _SMOOTH_DEFAULTS[smooth]
    max_order = len(correct)
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    if not any(correct):
        return 0.0
    precisions = [0.0] * max_order
    smooth_mteval = 1.0
    eff_order = max_order
    for n in range(1, max_order + 1):
        if smooth == "add-k" and n > 1:
            assert smooth_value is not None
            correct[n - 1] += smooth_value
            total[n - 1] += smooth_value
        if total[n - 1] == 0:
            break
        if effective_order:
            eff_order = n
        if correct[n - 1] == 0:
            if smooth == "exp":
                smooth_mteval *= 2
                precisions[n - 1] = 100.0 / (smooth_mteval * total[n - 1])
            elif smooth == "floor":
                assert smooth_value is not None
                precisions[n - 1] = 100.0 * smooth_value / total[n - 1]
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]
    log_sum = sum(math.log(p) if p != 0.0 else _LOG_ZERO for p in precisions[:eff_order])
    return bp * math.exp(log_sum / eff_order) / 100.0


def bleu_values(
    texts: Sequence[str],
    *,
    max_order: int = 4,
    smooth: SmoothMethod = "exp",
    smooth_value: float | None = None,
    effective_order: bool = True,
) -> np.ndarray:
    """Sentence BLEU of every chunk against all the other chunks, in ``[0, 1]``.

    ``values[i]`` equals ``sacrebleu.sentence_bleu(texts[i], texts[:i] + texts[i+1:]).score / 100`` with
    sacrebleu's sentence-level defaults (13a tokenisation, see :func:`tokenize_13a`; case-sensitive;
    ``smooth_method="exp"``, i.e. the NIST/mteval "method 3" smoothing; ``use_effective_order=True``),
    that is standard multi-reference BLEU:

    * n-gram precisions for ``n = 1..max_order``, each hypothesis n-gram count clipped by its largest
      count in any *single* reference;
    * brevity penalty ``exp(1 - r / c)`` when ``c < r``, with ``r`` the reference length closest to the
      hypothesis length ``c`` (ties go to the shorter reference).

    Instead of ``n`` separate calls (quadratic), one pass collects, for every n-gram in the corpus, its
    largest count over all chunks, which chunk holds it, and the second-largest count; the largest count
    in any *other* chunk is then the largest, unless chunk ``i`` holds it, in which case it is the
    second-largest (equal to the largest when another chunk ties). The closest other reference length comes
    from a sorted array of all lengths with ``i``'s own length removed. Total time is linear in the number of
    n-grams plus ``O(n log n)``.

    A corpus of fewer than two chunks has no references; every value is then ``0``.

    :param texts: the chunks.
    :param max_order: largest n-gram order.
    :param smooth: smoothing method, as sacrebleu's ``smooth_method``.
    :param smooth_value: parameter of ``"floor"`` / ``"add-k"`` (``None``: sacrebleu's defaults 0.1 / 1).
    :param effective_order: ignore n-gram orders that the hypothesis is too short to have (sacrebleu's
        ``use_effective_order``).
    :return: a float64 array of ``len(texts)`` values.
    """
    if max_order < 1:
        raise ValueError(f"max_order must be >= 1, got {max_order}")
    if smooth not in _SMOOTH_DEFAULTS:
        raise ValueError(f"unknown smoothing method {smooth!r}")
    n_chunks = len(texts)
    values = np.zeros(n_chunks, dtype=np.float64)
    if n_chunks < 2:
        return values

    lengths: list[int] = []
    counts: list[Counter[tuple[str, ...]]] = []
    # n-gram -> [largest count, index of a chunk holding it, second-largest count]
    best: dict[tuple[str, ...], list[int]] = {}
    for idx, text in enumerate(texts):
        tokens = tokenize_13a(text)
        lengths.append(len(tokens))
        chunk_counts = _ngram_counts(tokens, max_order)
        counts.append(chunk_counts)
        for gram, count in chunk_counts.items():
            stats = best.get(gram)
            if stats is None:
                best[gram] = [count, idx, 0]
            elif count > stats[0]:
                stats[2] = stats[0]
                stats[0] = count
                stats[1] = idx
            elif count > stats[2]:
                stats[2] = count

    sorted_lengths = sorted(lengths)
    for idx, chunk_counts in enumerate(counts):
        correct = [0.0] * max_order
        total = [0.0] * max_order
        for gram, count in chunk_counts.items():
            order = len(gram) - 1
            total[order] += count
            largest, holder, second = best[gram]
            other_max = second if holder == idx else largest
            if other_max:
                correct[order] += min(count, other_max)
        ref_len = _closest_other_length(sorted_lengths, lengths[idx])
        values[idx] = _sentence_bleu(
            correct,
            total,
            lengths[idx],
            ref_len,
            smooth=smooth,
            smooth_value=smooth_value,
            effective_order=effective_order,
        )
    return values


def cosine_values(vectors: np.ndarray) -> np.ndarray:
    """Mean cosine similarity of each row to all *other* rows, in ``O(n * d)``.

    Rows are L2-normalised (all-zero rows stay zero, so their similarities are ``0``); with ``s`` the sum of
    the normalised rows, ``values[i] = (u_i . s - u_i . u_i) / (n - 1)``. Fewer than two rows give zeros.

    :param vectors: an ``(n, d)`` array of embeddings.
    :return: a float64 array of ``n`` values in ``[-1, 1]``.
    """
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"vectors must be a 2-D array, got shape {matrix.shape}")
    n_rows = matrix.shape[0]
    if n_rows < 2:
        return np.zeros(n_rows, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    total = unit.sum(axis=0)
    self_sim = np.einsum("ij,ij->i", unit, unit)
    result: np.ndarray = (unit @ total - self_sim) / (n_rows - 1)
    return result


def random_values(n: int, seed: int) -> np.ndarray:
    """``n`` values drawn uniformly from ``[0, 1)`` by ``numpy.random.default_rng(seed)`` (a random baseline)."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return np.random.default_rng(seed).random(n)


def select_chunks(values: Sequence[float] | np.ndarray, weights: Sequence[int] | np.ndarray, alpha: float) -> list[int]:
    """Indices (ascending) of the chunks that maximise total value within the token budget ``alpha``.

    * ``alpha == 0`` gives ``[]`` and ``alpha == 1`` gives every index.
    * Otherwise this is the exact 0-1 knapsack with capacity ``ceil(alpha * sum(weights))`` (computed as
      ``ceil(alpha * W - 1e-9)`` so that float noise such as ``0.1 * 30 = 3.0000000000000004`` does not add a
      token), solved by OR-Tools' branch-and-bound knapsack solver without a time limit.

    Scaling: the solver needs integer profits, so ``profit_i = round(max(v_i, 0) / max_j v_j * PROFIT_SCALE)``
    (``PROFIT_SCALE = 10**9``): the optimum is exact for the scaled profits, i.e. within ``n * 1e-9``
    relative to ``max(values)`` of the true optimum. Chunks with zero profit (non-positive value, which can
    never raise the total) or a weight above the capacity are left out; chunks of weight ``0`` and positive
    profit are always taken.

    Ties: items are passed to the solver in index order and the solver is deterministic, so equal inputs
    always give the same selection; among sets of equal scaled profit it is the one the solver finds first,
    and chunks that add no value are never included.

    :raises ValueError: ``alpha`` outside ``[0, 1]`` (or NaN), a negative or non-integer weight, mismatched
        lengths, or a non-finite value.
    """
    if not (0.0 <= alpha <= 1.0):
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if len(values) != len(weights):
        raise ValueError(f"values and weights differ in length: {len(values)} != {len(weights)}")
    int_weights: list[int] = []
    for w in weights:
        if int(w) != w:
            raise ValueError(f"weights must be integers, got {w}")
        if w < 0:
            raise ValueError(f"weights must be non-negative, got {w}")
        int_weights.append(int(w))
    vals = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(vals)):
        raise ValueError("values must be finite")
    n_items = len(int_weights)
    if alpha == 0.0:
        return []
    if alpha == 1.0:
        return list(range(n_items))

    capacity = max(0, math.ceil(alpha * sum(int_weights) - 1e-9))
    top = float(vals.max()) if n_items else 0.0
    if top <= 0.0:
        return []
    profits = [round(max(float(v), 0.0) / top * PROFIT_SCALE) for v in vals]

    chosen = [i for i in range(n_items) if int_weights[i] == 0 and profits[i] > 0]
    candidates = [i for i in range(n_items) if 0 < int_weights[i] <= capacity and profits[i] > 0]
    if candidates:
        from ortools.algorithms.python import knapsack_solver

        solver = knapsack_solver.KnapsackSolver(
            knapsack_solver.SolverType.KNAPSACK_MULTIDIMENSION_BRANCH_AND_BOUND_SOLVER, "cuerag-selection"
        )
        solver.init([profits[i] for i in candidates], [[int_weights[i] for i in candidates]], [capacity])
        solver.solve()
        if not solver.is_solution_optimal():  # cannot happen without a time limit; guard the exactness claim
            raise RuntimeError("OR-Tools knapsack solver returned a non-optimal solution")
        chosen.extend(i for k, i in enumerate(candidates) if solver.best_solution_contains(k))
    return sorted(chosen)
