"""Retrieval limited to part of a corpus: the filter a caller gives (`DocFilter`) and the
documents it matches. What it selects in one graph snapshot: `cuerag.retrieval.subset` (apart, so
that a caller that only sends a filter, a CLI query answered by a server, loads no graph code).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cuerag.errors import ArgumentProblem, InvalidArguments, UnknownDocumentIds

if TYPE_CHECKING:
    from cuerag.graph.catalog import DocumentInfo

_Text = Annotated[str, Field(min_length=1, max_length=256)]


class DocFilter(BaseModel):
    """Which documents to use; every condition given must hold."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    doc_ids: list[_Text] | None = Field(default=None, min_length=1, max_length=1000)
    path_prefix: _Text | None = None  # the document's source path starts with it
    path_glob: _Text | None = None  # fnmatch pattern on the source path (`*` also crosses `/`)
    tags: list[_Text] | None = Field(default=None, min_length=1, max_length=50)  # any of them

    def matches(self, doc: DocumentInfo) -> bool:
        if self.doc_ids is not None and doc.doc_id not in self.doc_ids:
            return False
        if self.path_prefix is not None and not doc.source.startswith(self.path_prefix.removeprefix("./")):
            return False
        if self.path_glob is not None and not fnmatchcase(doc.source, self.path_glob.removeprefix("./")):
            return False
        if self.tags is not None:
            wanted = {t.casefold() for t in self.tags}
            if not wanted & {t.casefold() for t in doc.tags}:
                return False
        return True

    def key(self) -> str:
        """The filter as canonical JSON (a cursor is bound to it)."""
        return self.model_dump_json(exclude_none=True)


def make_filter(
    *,
    doc_ids: list[str] | None = None,
    path_prefix: str | None = None,
    path_glob: str | None = None,
    tags: list[str] | None = None,
) -> DocFilter | None:
    """A filter from loose values (None when none is given), range errors as ParameterError."""
    given = {"doc_ids": doc_ids, "path_prefix": path_prefix, "path_glob": path_glob, "tags": tags}
    given = {k: v for k, v in given.items() if v}
    if not given:
        return None
    try:
        return DocFilter(**given)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = [
            ArgumentProblem(".".join(str(p) for p in e["loc"]), e["msg"], e.get("input"), show_got=False)
            for e in exc.errors()
        ]
        raise InvalidArguments("filter", problems) from None


def matching(documents: dict[str, DocumentInfo], filter: DocFilter | None) -> list[DocumentInfo]:
    """The documents the filter selects, in id order. Ids the corpus does not hold are an error
    naming them: a misspelt id would otherwise narrow the search without a word."""
    if filter is None:
        return list(documents.values())
    if filter.doc_ids is not None:
        unknown = [d for d in dict.fromkeys(filter.doc_ids) if d not in documents]
        if unknown:
            raise UnknownDocumentIds(unknown)
        # Looked up, not scanned for: a thousand ids against a large corpus stays a thousand lookups.
        candidates = [documents[d] for d in sorted(set(filter.doc_ids))]
        return [d for d in candidates if filter.matches(d)]
    return [d for d in documents.values() if filter.matches(d)]


# Said with the empty result of a search whose filter selects no document. An empty result, not an
# error: the listing of the same filter answers "0 documents", and a filter that matches nothing
# (a tag no document has yet) is an answer to the question asked, not a call to be repaired.
NO_MATCH = (
    "no document of this corpus matches the filter, so nothing was searched: list the corpus's documents "
    "to see their ids, paths and tags"
)
