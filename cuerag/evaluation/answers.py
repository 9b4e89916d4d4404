"""Answers scored as in the paper: Accuracy (the normalised gold answer is contained in the output)
and token F1, SQuAD normalisation, the best over the gold answer's aliases."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

# How many of a method's top chunks go to the answer prompt.
ANSWER_TOP_N = 5


def normalize_answer(text: str) -> str:
    """SQuAD-style: lower case, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def answer_accuracy(prediction: str, answers: Sequence[str]) -> float:
    """1.0 when some normalised gold answer is contained in the normalised prediction, as whole
    words: gold "no" is not found in "Norway", nor "1990" in "1990s"."""
    pred = f" {normalize_answer(prediction)} "
    return float(any((gold := normalize_answer(a)) and f" {gold} " in pred for a in answers))


def answer_f1(prediction: str, answers: Sequence[str]) -> float:
    """SQuAD token F1 of the prediction against the best-matching gold answer."""
    pred = normalize_answer(prediction).split()
    best = 0.0
    for answer in answers:
        gold = normalize_answer(answer).split()
        common = sum((Counter(pred) & Counter(gold)).values())
        if common:
            precision, recall = common / len(pred), common / len(gold)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best
