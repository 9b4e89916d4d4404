"""Documents as MCP resources: the URI template a client reads a document through, the reader
behind it (the engine's `read_document`, bounded as the tool is), and the resource links a tool
result carries, one per document its hits or listing name, so a client can open the source.

A document id is looked up in the corpus's snapshot, never opened as a path; the SDK's resource
security still refuses `..` segments, absolute paths and NUL bytes in the URI's parameters before
the reader runs.
"""

from __future__ import annotations

import functools
from urllib.parse import quote

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.types import ResourceLink
from pydantic import BaseModel

from cuerag import CueRagError
from tools.common import AppState, state_of

# `{+doc_id}`: a document id is a path under its root ("notes/a.md"), slashes and all.
DOCUMENT_TEMPLATE = "cuerag://{corpus}/documents/{+doc_id}"
READ_CHARS = 100_000  # the most one read returns: read_document's own cap
MAX_LINKS = 20  # per result: a page of list_documents, or every hit of a retrieval


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
    read = functools.partial(engine.read_document, corpus, doc_id, max_chars=READ_CHARS)
    try:
        doc = await anyio.to_thread.run_sync(read)
    except CueRagError as exc:
        raise ResourceError(str(exc)) from exc
    if doc.end >= doc.total_chars:
        return doc.text
    more = doc.total_chars - doc.end
    return f"{doc.text}\n\n[{more} more characters: call read_document with doc_id and start={doc.end}]"


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
        ResourceLink(type="resource_link", uri=document_uri(corpus, doc_id), name=title)
        for doc_id, title in list(titles.items())[:MAX_LINKS]
    ]
