"""NER of a run's units in a worker thread, while the main thread embeds: neither needs the other.
Progress is reported from the main thread only, since callers' sinks may not accept calls from another."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any

from cuerag.errors import Cancelled
from cuerag.index.embedding import EMBED_SLICE
from cuerag.index.report import Progress
from cuerag.models.loading import Models


class _Recognition:
    """NER of the new units, in slices, meant for a worker thread: it counts what it has done
    for the owning thread to report, and stops at the next slice once `stop` is set."""

    def __init__(self, models: Models, texts: list[str]) -> None:
        self._ner = models.ner
        self._texts = texts
        self.done = 0
        self._reported = -1
        self.seconds = 0.0
        self.stop = threading.Event()

    def run(self) -> list[list[tuple[str, str]]]:
        started = time.perf_counter()
        mentions: list[list[tuple[str, str]]] = []
        for start in range(0, len(self._texts), EMBED_SLICE):
            if self.stop.is_set():
                raise Cancelled("entity recognition stopped")
            mentions.extend(self._ner.extract(self._texts[start : start + EMBED_SLICE]))
            self.done = len(mentions)
        self.seconds = time.perf_counter() - started
        return mentions

    def report(self, progress: Progress) -> None:
        done = self.done
        if done != self._reported:
            self._reported = done
            progress("ner", done, len(self._texts))


def _finished(future: Future[Any], wait: float = 0.5) -> bool:
    try:
        future.result(timeout=wait)
    except TimeoutError:
        return False
    except BaseException:  # raised again by the caller's result()
        return True
    return True
