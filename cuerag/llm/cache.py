"""A persistent cache of LLM answers, keyed by model + prompt, in one SQLite file.

An index run that dies half-way through the LLM stage is rerun with the same prompts: every
answer already received comes from here, so the rerun pays only for the rest. SQLite gives
atomic writes (a killed process never leaves half an entry) and is safe across threads with
one connection behind a lock.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def cache_key(parts: Sequence[str]) -> str:
    """A digest of the parts; lengths are hashed in so that no two splits of one string collide."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


class ResponseCache:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, completion TEXT NOT NULL)"
        )

    def get(self, parts: Sequence[str]) -> dict[str, Any] | None:
        try:
            with self._lock:
                row = self._db.execute("SELECT completion FROM responses WHERE key = ?", (cache_key(parts),)).fetchone()
            return None if row is None else dict(json.loads(row[0]))
        except (sqlite3.Error, ValueError) as exc:
            log.warning("LLM cache %s unreadable (%s); asking the model", self.path, exc)
            return None

    def put(self, parts: Sequence[str], completion: dict[str, Any]) -> None:
        """Store an answer; `parts[0]` names the model, kept in the clear for inspection."""
        try:
            with self._lock:
                self._db.execute(
                    "INSERT OR REPLACE INTO responses (key, model, completion) VALUES (?, ?, ?)",
                    (cache_key(parts), parts[0] if parts else "", json.dumps(completion)),
                )
        except sqlite3.Error as exc:
            log.warning("LLM cache %s not written (%s)", self.path, exc)

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(count)

    def close(self) -> None:
        with self._lock:
            self._db.close()
