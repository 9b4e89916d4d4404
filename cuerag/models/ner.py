"""Named-entity recognition with spaCy, the NER every unit and query goes through."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from cuerag.errors import ModelLoadError
from cuerag.text.entities import name_span


class SpacyNer:
    """spaCy NER with only the components NER needs (the others cost time, not accuracy)."""

    def __init__(self, name: str, *, labels: Sequence[str]) -> None:
        import spacy

        try:
            nlp = spacy.load(name)
        except OSError as exc:
            raise ModelLoadError(f"cannot load spaCy model {name!r}: {exc}") from exc
        if "ner" not in nlp.pipe_names:
            raise ModelLoadError(f"spaCy model {name!r} has no 'ner' component")
        # A component is needed only if NER listens to it (a shared tok2vec); drop the rest.
        needed = {"ner"} | set(_listened_to(nlp))
        nlp.select_pipes(disable=[p for p in nlp.pipe_names if p not in needed])
        self._nlp = nlp
        self._lock = threading.Lock()  # spaCy pipelines are not documented as thread-safe
        self._labels = frozenset(labels)
        self.name = name

    def extract(self, texts: Sequence[str]) -> list[list[tuple[str, str]]]:
        with self._lock:
            docs = list(self._nlp.pipe(texts, batch_size=256))
        return [[(name_span(e).text, e.label_) for e in doc.ents if e.label_ in self._labels] for doc in docs]


def _listened_to(nlp: Any) -> list[str]:
    ner = nlp.get_pipe("ner")
    names = []
    for name in nlp.pipe_names:
        listeners = getattr(nlp.get_pipe(name), "listening_components", [])
        if "ner" in listeners or ner in listeners:
            names.append(name)
    return names
