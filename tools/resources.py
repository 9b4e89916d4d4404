"""Documents as MCP resources: the URI template a client reads a document through, the reader
behind it (the engine's `read_document`, bounded as the tool is), the completions a client offers
while a user types the template's `{corpus}` and `{doc_id}`, and the resource links a tool result
carries, one per document its hits or listing name, so a client can open the source.

A document id is looked up in the corpus's snapshot, never opened as a path; the SDK's resource
security still refuses `..` segments, absolute paths and NUL bytes in the URI's parameters before
the reader runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import quote

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.types import Completion, ResourceLink
from pydantic import BaseModel

from cuerag import CueRagError, Engine
from cuerag.errors import CorpusNotFoundError, InvalidNameError, ParameterError
from cuerag.graph.catalog import MAX_PAGE, cursor_from
from tools.common import AppState, state_of

T = TypeVar("T")

# `{+doc_id}`: a document id is a path under its root ("notes/a.md"), slashes and all.
DOCUMENT_TEMPLATE = "cuerag://{corpus}/documents/{+doc_id}"
# A theme of the corpus's hierarchy opened (`top`: the broadest themes listed), as JSON.
THEME_TEMPLATE = "cuerag://{corpus}/themes/{theme_id}"
TOP_THEMES = "top"
READ_CHARS = 100_000  # the most one read returns: read_document's own cap
MAX_LINKS = 20  # per result: a page of list_documents, or every hit of a retrieval
MAX_COMPLETIONS = 100  # the most values one completion answer may carry (the specification's cap)
MIME_TYPE = "text/plain"
LINK_DESCRIPTION = "The document's extracted text."

# What the URI named wrongly (a corpus or document that is not there, a malformed name): the
# specification's "invalid params" (-32602) for a resource that does not exist, not an internal
# error (-32603), which is left to the store failing.
_NOT_THERE = (CorpusNotFoundError, InvalidNameError, ParameterError)


def linkable(doc_id: str) -> bool:
    """Whether a document id makes a URI that can be read back: the SDK refuses an absolute path
    (POSIX or Windows: `/x`, `C:x`, `\\x`), a NUL and `..` (split at either slash), and a client
    normalising the URI would drop `.` and `..` segments. Such ids (a JSON record may carry any)
    get no link; read_document still reads them."""
    if not doc_id or "\x00" in doc_id or "\\" in doc_id or doc_id.startswith("/"):
        return False
    if len(doc_id) >= 2 and doc_id[1] == ":" and doc_id[0].isascii() and doc_id[0].isalpha():
        return False  # a Windows drive: `C:notes.md`
    return not ({".", ".."} & set(doc_id.split("/")))


def document_uri(corpus: str, doc_id: str) -> str:
    """The resource URI of a document: its id percent-encoded, its slashes kept."""
    return f"cuerag://{corpus}/documents/{quote(doc_id, safe='/')}"


async def read_document_resource(corpus: str, doc_id: str, ctx: Context[AppState]) -> str:
    """A document's extracted text (the first 100,000 characters; read_document pages further)."""
    engine = state_of(ctx).engine
    doc = await _resource_read(functools.partial(engine.read_document, corpus, doc_id, max_chars=READ_CHARS))
    if doc.end >= doc.total_chars:
        return doc.text
    more = doc.total_chars - doc.end
    return f"{doc.text}\n\n[{more} more characters: call read_document with doc_id and start={doc.end}]"


async def read_theme_resource(corpus: str, theme_id: str, ctx: Context[AppState]) -> str:
    """A theme opened (its report, evidence, documents and children), or with `top` the broadest
    themes, as the themes tool returns them."""
    engine = state_of(ctx).engine
    read = functools.partial(engine.themes, corpus, theme_id=None if theme_id == TOP_THEMES else theme_id)
    return (await _resource_read(read)).model_dump_json()


async def _resource_read(read: Callable[[], T]) -> T:
    """An engine read for a resource, off the event loop; what the URI named wrongly is "not
    found", any other engine error a resource error."""
    try:
        return await anyio.to_thread.run_sync(read)
    except _NOT_THERE as exc:
        raise ResourceNotFoundError(str(exc)) from exc
    except CueRagError as exc:
        raise ResourceError(str(exc)) from exc


def document_links(result: BaseModel) -> list[ResourceLink]:
    """A link to each document a result's chunks (or listed documents) come from, in order."""
    corpus = getattr(result, "corpus", None)
    items = getattr(result, "chunks", None) or getattr(result, "documents", None)
    if not isinstance(corpus, str) or not isinstance(items, list):
        return []
    titles: dict[str, str] = {}
    for item in items:
        doc_id = getattr(item, "doc_id", None)
        if isinstance(doc_id, str) and doc_id not in titles and linkable(doc_id):
            titles[doc_id] = str(getattr(item, "title", "") or doc_id)
    return [
        ResourceLink(
            type="resource_link",
            uri=document_uri(corpus, doc_id),
            name=title,
            description=LINK_DESCRIPTION,
            mime_type=MIME_TYPE,
        )
        for doc_id, title in list(titles.items())[:MAX_LINKS]
    ]


def _completion(matches: list[str], more: bool = False) -> Completion:
    shown = matches[:MAX_COMPLETIONS]
    more = more or len(matches) > len(shown)
    return Completion(values=shown, total=None if more else len(shown), has_more=more)


def complete_corpus(engine: Engine, prefix: str) -> Completion:
    """Corpus names starting with what the user has typed."""
    return _completion([name for name in engine.corpora() if name.startswith(prefix)])


def complete_doc_id(engine: Engine, corpus: str, prefix: str) -> Completion:
    """Document ids of `corpus` starting with what the user has typed, in id order, read a page of
    the listing at a time from the first id that may match, until a full answer is found or the
    ids pass the prefix; nothing for a corpus that is not there (the user is still typing it). Ids
    no URI can carry are left out. Read from the start and to the end, as this did before, a
    prefix no id has (any client may send one, per keystroke) cost a page of the listing per 200
    documents, each built from the whole corpus."""
    if corpus not in engine.corpora():
        return _completion([])
    matches: list[str] = []
    cursor = cursor_from(prefix, corpus)
    while len(matches) <= MAX_COMPLETIONS:
        page = engine.list_documents(corpus, cursor=cursor, limit=MAX_PAGE)
        for d in page.documents:
            if d.doc_id.startswith(prefix):
                if linkable(d.doc_id):
                    matches.append(d.doc_id)
            elif d.doc_id > prefix:  # ids are in order: none after this one starts with the prefix
                return _completion(matches)
        cursor = page.next_cursor
        if cursor is None:
            return _completion(matches)
    return _completion(matches, more=True)
