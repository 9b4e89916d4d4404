"""Documents in: plain text, Markdown, JSON and JSONL corpora, validated before anything is written.

Supported JSON forms (the common benchmark layouts):
- a list of records `[{"title", "text", "id"?}]` (also `paragraph_text` / `contents` for the text);
- a dict `{title: [sentence, ...]}` (HotpotQA's corpus form; text = "".join(sentences)) or `{title: text}`;
- JSONL, one record per line.
A document keeps the id it is given, or gets one from the hash of its title and text, so that
re-indexing the same text is recognised as the same document.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from cuerag.errors import InputError

TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".rst", ".text"}
JSON_SUFFIXES = {".json", ".jsonl", ".ndjson"}
_TEXT_KEYS = ("text", "paragraph_text", "contents", "content", "body")
# A file larger than this is refused rather than read into memory whole.
MAX_FILE_BYTES = 512 * 1024 * 1024


class Document(BaseModel):
    """One document to index."""

    id: str = Field(min_length=1, max_length=256)
    title: str = ""
    text: str
    # Where a document read from a file came from (None for inline documents): its path relative
    # to the indexed root (POSIX separators), the root as an absolute path, and the sha256 of the
    # file's bytes, which decides whether the file changed (cuerag.sync).
    source: str | None = None
    root: str | None = None
    file_hash: str | None = None


def content_id(title: str, text: str) -> str:
    """A stable id for a document without one: the hash of its title and text."""
    # surrogatepass: a lone surrogate (from a JSON "\ud800" escape) must reach check_documents,
    # which refuses it by name, instead of crashing here; valid text hashes as before.
    digest = hashlib.sha256(f"{title}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"doc-{digest[:24]}"


def make_document(title: str, text: str, doc_id: str | None = None) -> Document:
    """Build a document, giving it a content-hash id when none is given."""
    title = title.strip()
    if "\x00" in title and not doc_id:
        # The content id joins title and text with a NUL: a NUL in the title would let two
        # different documents share an id, and the later one would silently replace the other.
        raise InputError(f"document title {title!r} holds a NUL character; remove it or give the document an id")
    return Document(id=doc_id or content_id(title, text), title=title, text=text)


def _read_text(path: Path) -> str:
    size = path.stat().st_size
    if size == 0:
        raise InputError(f"file is empty: {path}")
    if size > MAX_FILE_BYTES:
        raise InputError(f"file is larger than {MAX_FILE_BYTES // 2**20} MiB: {path}; split it first")
    raw = path.read_bytes()
    if b"\x00" in raw[:8192]:
        raise InputError(f"file looks binary (NUL bytes), not text: {path}")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"file is not valid UTF-8 (byte {exc.start}): {path}; convert it to UTF-8 first") from exc
    if not text.strip():
        raise InputError(f"file holds only whitespace: {path}")
    return text


def _record_to_document(record: Any, where: str) -> Document:
    if not isinstance(record, dict):
        raise InputError(f"{where}: expected an object with 'title' and 'text', got {type(record).__name__}")
    text = next((record[k] for k in _TEXT_KEYS if k in record), None)
    if isinstance(text, list) and all(isinstance(s, str) for s in text):
        text = "".join(text)
    if not isinstance(text, str):
        raise InputError(f"{where}: a record needs a string 'text' field (keys found: {sorted(record)})")
    title = record.get("title", "")
    if not isinstance(title, str):
        raise InputError(f"{where}: 'title' must be a string")
    raw_id = record.get("id", record.get("idx"))
    doc_id = str(raw_id) if raw_id is not None and str(raw_id).strip() else None
    return make_document(title, text, doc_id)


def documents_from_json(data: Any, where: str) -> list[Document]:
    """Documents from parsed JSON in any supported corpus form."""
    if isinstance(data, list):
        return [_record_to_document(r, f"{where}[{i}]") for i, r in enumerate(data)]
    if isinstance(data, dict):
        if any(k in data for k in _TEXT_KEYS) and "title" in data:
            return [_record_to_document(data, where)]
        docs = []
        for title, value in data.items():
            if isinstance(value, list) and all(isinstance(s, str) for s in value):
                docs.append(make_document(title, "".join(value)))
            elif isinstance(value, str):
                docs.append(make_document(title, value))
            else:
                raise InputError(
                    f"{where}[{title!r}]: expected a list of sentences or a string, got {type(value).__name__}"
                )
        return docs
    raise InputError(f"{where}: expected a list of records or a {{title: sentences}} object")


def _load_json_file(path: Path) -> list[Document]:
    text = _read_text(path)
    if path.suffix.lower() in {".jsonl", ".ndjson"}:
        docs = []
        # Split on "\n" only: str.splitlines() also breaks on U+2028 and friends, which JSON
        # strings may hold.
        for lineno, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}: line {lineno} is not valid JSON ({exc.msg}, column {exc.colno})") from exc
            except RecursionError as exc:  # as for a .json file: a clear refusal, not a crash
                raise InputError(f"{path}: line {lineno}: JSON nested too deeply to be a corpus") from exc
            docs.append(_record_to_document(record, f"{path}:{lineno}"))
        return docs
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from exc
    except RecursionError as exc:
        raise InputError(f"{path}: JSON nested too deeply to be a corpus") from exc
    return documents_from_json(data, str(path))


def _title_of_text_file(path: Path, text: str) -> str:
    """A Markdown file's first heading, else the file name without its suffix."""
    if path.suffix.lower() in {".md", ".markdown"}:
        for line in text.splitlines():
            if line.startswith("#"):
                heading = line.lstrip("#").strip()
                if heading:
                    return heading
    # A file name that is not valid UTF-8 reaches Python with its bad bytes as lone surrogates,
    # which no encoder accepts: show them as U+FFFD instead.
    return path.stem.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def load_file(path: Path) -> list[Document]:
    """Documents from one file; raises InputError with the reason when it cannot be read."""
    if path.suffix.lower() in JSON_SUFFIXES:
        docs = _load_json_file(path)
    else:
        text = _read_text(path)
        docs = [make_document(_title_of_text_file(path, text), text)]
    if not docs:
        raise InputError(f"no documents found in {path}")
    return docs


def dedupe_documents(docs: Iterable[Document]) -> list[Document]:
    """Drop exact repeats of a document id, keeping the last version (a later file wins)."""
    by_id: dict[str, Document] = {}
    for doc in docs:
        by_id.pop(doc.id, None)
        by_id[doc.id] = doc
    return list(by_id.values())


def _refuse_lone_surrogates(doc: Document) -> None:
    """A lone surrogate (a JSON "\\ud800" escape, or an undecodable byte let through) is not
    Unicode: the tokenizers and the store would fail on it mid-run."""
    for field, value in (("title", doc.title), ("text", doc.text)):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InputError(
                f"document {doc.id!r}: its {field} holds {value[exc.start]!r} at position {exc.start}, a lone "
                "surrogate that is not valid Unicode; fix the source's encoding"
            ) from exc


def check_documents(docs: Sequence[Document]) -> list[Document]:
    """Refuse a batch that holds nothing to index or text that is not valid Unicode; drop
    documents that are only whitespace."""
    for doc in docs:
        _refuse_lone_surrogates(doc)
    kept = [d for d in docs if d.text.strip()]
    if not kept:
        raise InputError("no document has any text to index")
    return kept
