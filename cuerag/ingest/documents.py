"""Documents in: files of every supported format (read by `cuerag.ingest.formats`), and JSON and JSONL
corpora, validated before anything is written.

Supported JSON forms (the common benchmark layouts):
- a list of records `[{"title", "text", "id"?}]` (also `paragraph_text` / `contents` for the text);
- a dict `{title: [sentence, ...]}` (HotpotQA's corpus form; text = "".join(sentences)) or `{title: text}`;
- JSONL, one record per line.
A record keeps the id it is given, or gets one from the hash of its title and text, so that
re-indexing the same text is recognised as the same document. A document read from a text-like
file (Markdown, HTML, PDF, ...) is identified by its path relative to the indexed root.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from cuerag.errors import InputError
from cuerag.ingest.corpus_shape import TEXT_KEYS, NotACorpus, NotJson, jsonl_shape_problem, shape_problem
from cuerag.ingest.folders import shown
from cuerag.ingest.formats import (
    DOCUMENT_SUFFIXES,
    JSON_SUFFIXES,
    SUPPORTED_SUFFIXES,
    ByteBudget,
    Check,
    DocumentStructure,
    ReadLimits,
    extract,
    read_file_once,
    unsupported_format,
)
from cuerag.ingest.formats.reading import decode_text

TEXT_SUFFIXES = DOCUMENT_SUFFIXES  # the name earlier code imports
_TEXT_KEYS = TEXT_KEYS  # one list of text fields for reading records and for judging a corpus's shape


class Document(BaseModel):
    """One document to index."""

    id: str = Field(min_length=1, max_length=256)
    title: str = ""
    text: str
    # Where a document read from a file came from (None for inline documents): its path relative
    # to the indexed root (POSIX separators), the root as an absolute path, and the sha256 of the
    # file's bytes, which decides whether the file changed (cuerag.index.sync).
    source: str | None = None
    root: str | None = None
    file_hash: str | None = None
    structure: DocumentStructure | None = None  # sections, pages, links of a file read by cuerag.ingest.formats


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


# `json.loads` refuses an integer of more digits than Python converts (`sys.get_int_max_str_digits`)
# with a bare ValueError, which read as a crash ("use sys.set_int_max_str_digits()"): no corpus
# holds one.
_NUMBER_TOO_LONG = "JSON holding a number too long to read (thousands of digits) is not a corpus"


def _load_json_file(path: Path, raw: bytes, *, walked: bool = False) -> list[Document]:
    """The documents of a JSON corpus file. `walked` (found in a folder, not named): a file that
    does not parse raises NotJson, and one without a corpus's shape NotACorpus, both to be passed
    over (cuerag.ingest.corpus_shape); named, each is an error with its reason."""
    broken: type[InputError] = NotJson if walked else InputError
    try:
        text = decode_text(raw, path)
    except InputError as exc:
        raise broken(str(exc)) from None
    if path.suffix.lower() in {".jsonl", ".ndjson"}:
        docs: list[Document] = []
        # Split on "\n" only: str.splitlines() also breaks on U+2028 and friends, which JSON
        # strings may hold.
        for lineno, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            # Past the first record the file has a corpus's shape: a bad line fails it, walked or not.
            refusal = broken if not docs else InputError
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise refusal(f"{path}: line {lineno} is not valid JSON ({exc.msg}, column {exc.colno})") from exc
            except RecursionError as exc:  # as for a .json file: a clear refusal, not a crash
                raise refusal(f"{path}: line {lineno}: JSON nested too deeply to be a corpus") from exc
            except ValueError as exc:  # as for a .json file
                raise refusal(f"{path}: line {lineno}: {_NUMBER_TOO_LONG}") from exc
            problem = jsonl_shape_problem(record) if walked and not docs else None
            if problem is not None:
                raise NotACorpus(f"{path}: not a corpus: {problem}")
            docs.append(_record_to_document(record, f"{path}:{lineno}"))
        return docs
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise broken(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from exc
    except RecursionError as exc:
        raise broken(f"{path}: JSON nested too deeply to be a corpus") from exc
    except ValueError as exc:  # valid JSON past Python's limit on an integer's digits (4300)
        raise broken(f"{path}: {_NUMBER_TOO_LONG}") from exc
    problem = shape_problem(data) if walked else None
    if problem is not None:
        raise NotACorpus(f"{path}: not a corpus: {problem}")
    return documents_from_json(data, str(path))


def _relative(path: Path, root: Path) -> str:
    """The file's path relative to the root, with POSIX separators: its id and its citation.

    The path may be relative (`index .` walks `sub/a.md`) or reach the root through a symlinked
    folder while the root is resolved: each form is tried before the bare name, which would
    resolve the file's links against the root instead of its own folder (issue 30)."""
    for candidate in (path, path.absolute(), path.parent.resolve() / path.name):
        try:
            return shown(candidate.relative_to(root).as_posix())  # a name not UTF-8 as escapes
        except ValueError:
            continue
    return shown(path.name)


def load_file(
    path: Path,
    *,
    root: Path | None = None,
    check: Check | None = None,
    limits: ReadLimits | None = None,
    budget: ByteBudget | None = None,
) -> list[Document]:
    """Documents from one file; raises InputError with a one-line reason when it cannot be read.
    The file is opened once: `check` sees the real path of the open file before a byte is read,
    and nothing is read through the name again. `root` (default: the file's folder) is what the
    document's id and source are relative to."""
    limits = limits or ReadLimits()
    root = root if root is not None else path.parent
    _check_name(path, root)
    raw = read_file_once(path, limits=limits, check=check, budget=budget)
    return parse_file(path, raw, root=root, limits=limits)


def _check_name(path: Path, root: Path) -> None:
    """Refusals decided by the name alone, before a byte is read."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise unsupported_format(path, suffix)
    if len(_relative(path, root)) > 256 and suffix not in JSON_SUFFIXES:
        raise InputError(f"{path}: its path relative to the indexed folder is longer than 256 characters")


def parse_file(
    path: Path, raw: bytes, *, root: Path, limits: ReadLimits, source: str | None = None, walked: bool = False
) -> list[Document]:
    """Documents from the bytes of one file already read (through `read_file_once`): `path` names
    it and picks its format, nothing is read through it. `source` is the file's path relative to
    the root as the walk found it (`FoundFile.source`); without it, it is worked out from `path`.
    Links are resolved from it, so it must be the same as the document's stored source. `walked`:
    found in a folder, not named, where a JSON file that does not parse or has no corpus's shape
    raises NotACorpus (NotJson for the first)."""
    _check_name(path, root)
    source = source if source is not None else _relative(path, root)
    suffix = path.suffix.lower()
    reason: str | None = None
    refusal: type[InputError] = InputError
    docs: list[Document] = []
    try:
        if suffix in JSON_SUFFIXES:
            docs = [d.model_copy(update={"source": source}) for d in _load_json_file(path, raw, walked=walked)]
        else:
            found = extract(raw, suffix=suffix, name=str(path), source=source, limits=limits)
            title = (found.title or "").strip() or Path(source).stem
            docs = [Document(id=source, title=title, text=found.text, source=source, structure=found.structure)]
    except InputError as exc:
        reason, refusal = str(exc), type(exc)
    # A refusal is raised afresh, outside the handler and with the bytes dropped: the first error's
    # traceback holds every frame that had the file's bytes, and would keep them alive with it.
    del raw
    if reason is not None:
        raise refusal(reason)
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
