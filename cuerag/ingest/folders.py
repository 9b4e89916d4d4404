"""Which files a path argument stands for: the walk of a folder, its ignore rules, and each file's
root and source (its path relative to the root, which is the document's identity).

The root of a folder argument is the folder; the root of a file argument is its parent folder, so
`index notes/` and `index notes/a.md` give the file the same identity, `a.md`. In a folder,
dot-files and dot-folders (`.git`, `.obsidian`) are skipped unless asked for, a `.gitignore`
anywhere in the tree is honoured for the folder it sits in, `include` / `exclude` globs (gitignore
syntax, matched against the path relative to the root) narrow the walk further, and files in
formats the reader does not know are passed over. A file named explicitly is taken as named, but
one in an unsupported format is refused like any other bad file.

A file that cannot be walked to (a symlink loop, a broken link, something that is not a regular
file) becomes a per-file failure; the caller decides whether that stops the run. Symlinks to files
are followed (the caller's `check` sees every file before it is read); symlinks to folders are
not walked, so a link can never make the walk loop.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, Field

from cuerag.errors import Cancelled, InputError, RequestTooLarge
from cuerag.ingest.artefacts import LeftOutTally, leaves_out_file, leaves_out_folder
from cuerag.ingest.formats import SUPPORTED_SUFFIXES, unsupported_format  # the formats the reader knows: one home
from cuerag.ingest.globs import Patterns, compile_patterns, strict_patterns
from cuerag.ingest.tree import walk_tree

# Longer relative paths could not be a document id (Document.id holds 256 characters).
_MAX_SOURCE = 256
# A .gitignore larger than this is not read: real ones are a few KiB, and the walk reads it whole.
MAX_GITIGNORE_BYTES = 1 << 20

FileCheck = Callable[[Path], object]
"""Called on every file before it is read; raises to refuse it (and with it the whole run)."""


class WalkRules(BaseModel):
    """What a folder walk leaves out, beyond files in formats the reader does not know."""

    include: tuple[str, ...] = Field(default=(), description="Only files matching one of these globs.")
    exclude: tuple[str, ...] = Field(default=(), description="Leave out files and folders matching these globs.")
    hidden: bool = Field(default=False, description="Walk dot-files and dot-folders too.")
    gitignore: bool = Field(default=True, description="Honour .gitignore files in the tree.")


class FileOutcome(BaseModel):
    """One file in an index report: its path (as walked) and, for failures, why."""

    path: str
    reason: str = ""


@dataclass(frozen=True)
class FoundFile:
    """A file to read: where it is, the root it belongs to and its path relative to that root."""

    path: Path
    root: Path
    source: str

    @property
    def location(self) -> str:
        """The absolute place of the file under its root: what a sync compares with the store."""
        return f"{self.root.as_posix()}/{self.source}"


@dataclass
class Walk:
    """The files of one or more path arguments in walk order, with those that could not be
    walked to in their places, and the places a sync may remove documents from (each folder
    argument, each file argument)."""

    entries: list[FoundFile | FileOutcome] = field(default_factory=list)
    scopes: list[str] = field(default_factory=list)
    # What the walk noticed that stops no file: a .gitignore it did not read, or lines of one.
    warnings: list[FileOutcome] = field(default_factory=list)
    # Files in a walked folder passed over for their format, by suffix ("" for none): "nothing
    # failed" must not hide that most of a folder was never read.
    passed_over: dict[str, int] = field(default_factory=dict)
    # Generator artefacts and vendored folders left out by default (cuerag.ingest.artefacts).
    left_out: LeftOutTally = field(default_factory=LeftOutTally)

    @property
    def files(self) -> list[FoundFile]:
        return [e for e in self.entries if isinstance(e, FoundFile)]

    @property
    def failed(self) -> list[FileOutcome]:
        return [e for e in self.entries if isinstance(e, FileOutcome)]


def shown(path: str | Path) -> str:
    """A path as text that every encoder accepts, one text per path: a file name that is not
    valid UTF-8 reaches Python with its bad bytes as lone surrogates, written here as `\\xff`
    escapes. (As U+FFFD, "x\\xff.txt" and "x\\xfe.txt" would be one document id, and one of the two
    files would be lost.)"""
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def walk_paths(
    paths: Sequence[str | Path],
    *,
    rules: WalkRules | None = None,
    check: FileCheck | None = None,
    should_stop: Callable[[], bool] | None = None,
    skip: Sequence[Path] = (),
    max_files: int | None = None,
) -> Walk:
    """Every indexable file under the given files and folders, in a stable order, each once (a
    path given twice, or a file given and inside a folder given, is walked once). Raises
    InputError for a path that does not exist, and `check`'s refusal of a named path; a file that
    `check` refuses inside a walked folder is recorded as failed, like any bad file. Folders in
    `skip` (the data directory) are never entered. `should_stop` is asked at every folder and
    file: True raises Cancelled. More than `max_files` files is refused whole (RequestTooLarge)."""
    if not paths:
        raise InputError("no paths given")
    rules = rules or WalkRules()
    walk = Walk()
    limit = _Limit(should_stop, max_files, walk)
    skipped = {p.expanduser().resolve() for p in skip}
    given: set[Path] = set()
    for raw in paths:
        if "\x00" in str(raw):  # os calls raise a bare ValueError on it
            raise InputError(f"path {str(raw)!r} holds a NUL character")
        path = Path(raw).expanduser()
        try:
            missing = not path.exists() and not path.is_symlink()
        except OSError as exc:  # ENAMETOOLONG: a name over 255 bytes; the path is not echoed whole
            start = shown(raw)[:80] + ("…" if len(shown(raw)) > 80 else "")
            raise InputError(f"path {start!r} cannot be used: {exc.strerror or exc}") from None
        if missing:
            raise InputError(f"path not found: {path}")
        # Named outright, the data directory (or a path in it) was walked: only a folder found
        # inside a walked one was passed over, so `paths=["data"]` read the store's own files.
        if any(_inside(path, folder) for folder in skipped):
            raise InputError(f"path {shown(raw)!r} is in the data directory, which holds the index's own files")
        # The same path given again (paths=[folder] * 30) is walked once: thirty walks cost thirty
        # times the time and memory for one result.
        key = path.resolve() if path.is_dir() else path.parent.resolve() / path.name
        if key in given:
            continue
        given.add(key)
        if path.is_dir():
            root = path.resolve()
            walk.scopes.append(root.as_posix())
            _walk_folder(path, root, rules, check, walk, limit, skipped)
        else:
            root = path.parent.resolve()
            found = FoundFile(path=path, root=root, source=shown(path.name))
            walk.scopes.append(found.location)
            if path.suffix.lower() not in SUPPORTED_SUFFIXES:
                walk.entries.append(FileOutcome(path=shown(path), reason=str(unsupported_format(None, path.suffix))))
                continue
            limit.count_file()
            _add_file(found, check, walk, limit, named=True)
    _merge_duplicates(walk)
    return walk


class _Limit:
    """A walk's cancellation check and file cap, asked at every folder and file."""

    def __init__(self, should_stop: Callable[[], bool] | None, max_files: int | None, walk: Walk) -> None:
        self._should_stop = should_stop
        self._max_files = max_files
        self._walk = walk
        self._files = 0

    def step(self) -> None:
        if self._should_stop is not None and self._should_stop():
            raise Cancelled("index run cancelled while walking the folders: nothing was written")

    def count_file(self) -> None:
        self.step()
        self._files += 1
        if self._max_files is not None and self._files > self._max_files:
            raise RequestTooLarge(
                f"this request names more than {self._max_files:,} files (CUERAG_MAX_FILES_PER_REQUEST); "
                "index the folder in parts (its sub-folders, or with include / exclude globs), or raise the limit"
            )


def _merge_duplicates(walk: Walk) -> None:
    """One entry per file location: a file given by name and also found in a folder given."""
    seen: set[str] = set()
    kept: list[FoundFile | FileOutcome] = []
    for entry in walk.entries:
        key = entry.location if isinstance(entry, FoundFile) else f"failed:{entry.path}"
        if key in seen:
            continue
        seen.add(key)
        kept.append(entry)
    walk.entries = kept
    walk.scopes = list(dict.fromkeys(walk.scopes))


def _walk_folder(
    folder: Path, root: Path, rules: WalkRules, check: FileCheck | None, walk: Walk, limit: _Limit, skip: set[Path]
) -> None:
    selected = _Globs(rules)
    ignores: list[tuple[str, Patterns]] = []  # (folder relative to root, its .gitignore)
    found: list[FoundFile] = []
    tree = walk_tree(folder, onerror=lambda exc: _unreadable_folder(exc, walk), stop=limit.step)
    for here, dirs, names in tree:
        rel_here = Path(here).relative_to(folder).as_posix()
        rel_here = "" if rel_here == "." else rel_here
        if rules.gitignore and ".gitignore" in names:
            spec = _read_gitignore(Path(here) / ".gitignore", walk)
            if spec is not None:
                ignores.append((rel_here, spec))
        kept_dirs = []
        for name in sorted(dirs):
            rel = _join(rel_here, name)
            if _skipped(rel, name, is_dir=True, rules=rules, globs=selected, ignores=ignores):
                continue
            # The data directory under an allowed root: its store files are never documents, and
            # walking them would read what another corpus holds.
            if skip and (Path(here) / name).resolve() in skip:
                continue
            if leaves_out_folder(name, Path(here) / name, rel, rules.include, walk.left_out):
                continue
            kept_dirs.append(name)
        dirs[:] = kept_dirs  # the walk descends only into what is left here
        for name in names:
            rel = _join(rel_here, name)
            if _skipped(rel, name, is_dir=False, rules=rules, globs=selected, ignores=ignores):
                continue
            if not selected.included(rel):
                continue
            if leaves_out_file(name, names, Path(here) / name, rel, rules.include, walk.left_out):
                continue
            suffix = Path(name).suffix.lower()
            if suffix not in SUPPORTED_SUFFIXES:
                walk.passed_over[suffix] = walk.passed_over.get(suffix, 0) + 1
                continue
            limit.count_file()
            found.append(FoundFile(path=Path(here) / name, root=root, source=shown(rel)))
    for file in sorted(found, key=lambda f: f.source):
        _add_file(file, check, walk, limit)


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder)  # the folder itself included


def _add_file(file: FoundFile, check: FileCheck | None, walk: Walk, limit: _Limit, *, named: bool = False) -> None:
    """Take a file if it is a regular file (through any symlinks), else record why not."""
    limit.step()
    try:
        mode = file.path.stat().st_mode  # follows symlinks: a loop or a dangling link raises here
    except OSError as exc:
        reason = "symlink loop" if exc.errno == errno.ELOOP else _os_reason(exc)
        walk.entries.append(FileOutcome(path=shown(file.path), reason=reason))
        return
    if not stat.S_ISREG(mode):
        walk.entries.append(FileOutcome(path=shown(file.path), reason="not a regular file"))
        return
    if len(file.source) > _MAX_SOURCE:
        walk.entries.append(
            FileOutcome(path=shown(file.path), reason=f"path relative to the root is over {_MAX_SOURCE} characters")
        )
        return
    if check is not None:
        if named:
            check(file.path)  # a path the caller named outright: a refusal is the request's
        else:
            try:
                check(file.path)
            except InputError as exc:
                # A link inside a walked folder that leads where the caller may not read: refused
                # like a bad file, never read, and the rest of the folder goes on (a link dropped
                # into a watched folder must not stop its syncs).
                walk.entries.append(FileOutcome(path=shown(file.path), reason=_refusal(exc, file)))
                return
    walk.entries.append(file)


def _refusal(exc: InputError, file: FoundFile) -> str:
    """The check's reason without the file's own name (the report line carries it)."""
    text = str(exc)
    for form in (repr(str(file.path)), str(file.path)):
        text = text.replace(f"path {form} is ", "leads ").replace(form, file.source)
    return text


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "broken symbolic link (its target does not exist)"
    return f"cannot be read: {exc.strerror or exc}"


def _unreadable_folder(exc: OSError, walk: Walk) -> None:
    walk.entries.append(FileOutcome(path=shown(exc.filename or "?"), reason=f"folder {_os_reason(exc)}"))


def _read_gitignore(path: Path, walk: Walk) -> Patterns | None:
    """The rules of a folder's .gitignore, read as git reads it: a symbolic link is not followed
    (git stopped following them in 2.32; here it could point outside the allowed roots), anything
    but a regular file is passed over without blocking (a FIFO), a file over
    `MAX_GITIGNORE_BYTES` is not read, and a line that is not a valid pattern is dropped; each of
    these is reported, and the folder is walked with the rules that are left."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        reason = "a symbolic link: not followed, as git does not" if exc.errno == errno.ELOOP else _os_reason(exc)
        walk.warnings.append(FileOutcome(path=shown(path), reason=reason))
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            walk.warnings.append(FileOutcome(path=shown(path), reason="not a regular file; its rules are not read"))
            return None
        if info.st_size > MAX_GITIGNORE_BYTES:
            walk.warnings.append(
                FileOutcome(path=shown(path), reason=f"over {MAX_GITIGNORE_BYTES // 1024} KiB; its rules are not read")
            )
            return None
        raw = os.read(fd, MAX_GITIGNORE_BYTES + 1)[:MAX_GITIGNORE_BYTES]
    except OSError as exc:
        walk.warnings.append(FileOutcome(path=shown(path), reason=_os_reason(exc)))
        return None
    finally:
        os.close(fd)
    compiled = compile_patterns(raw.decode("utf-8", errors="replace").splitlines())
    # Grouped by reason, each with its first line numbers: a warning line, not a list of every line.
    by_reason: dict[str, list[int]] = {}
    for refused in compiled.refused:
        by_reason.setdefault(refused.reason, []).append(refused.index + 1)
    for reason, numbers in by_reason.items():
        lines = ", ".join(map(str, numbers[:10])) + (" …" if len(numbers) > 10 else "")
        walk.warnings.append(FileOutcome(path=shown(path), reason=f"{reason} on line {lines}; those lines are ignored"))
    return compiled


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _skipped(
    rel: str,
    name: str,
    *,
    is_dir: bool,
    rules: WalkRules,
    globs: _Globs,
    ignores: list[tuple[str, Patterns]],
) -> bool:
    if not rules.hidden and name.startswith("."):
        return True
    if globs.excluded(rel, is_dir=is_dir):
        return True
    for base, spec in ignores:
        # A .gitignore speaks for its own folder and below, with paths relative to that folder.
        if base and not rel.startswith(base + "/"):
            continue
        inner = rel[len(base) + 1 :] if base else rel
        if spec.match_file(inner + "/" if is_dir else inner):
            return True
    return False


class _Globs:
    """The include / exclude globs of a walk, in gitignore syntax."""

    def __init__(self, rules: WalkRules) -> None:
        self._include = strict_patterns(rules.include, "include") if rules.include else None
        self._exclude = strict_patterns(rules.exclude, "exclude") if rules.exclude else None

    def excluded(self, rel: str, *, is_dir: bool) -> bool:
        return self._exclude is not None and self._exclude.match_file(rel + "/" if is_dir else rel)

    def included(self, rel: str) -> bool:
        return self._include is None or self._include.match_file(rel)


def is_ignored(rel: PurePosixPath, rules: WalkRules) -> bool:
    """Whether a change at `rel` (relative to a watched root) can be left unseen: inside a
    dot-folder or matching an exclude glob. .gitignore rules are left to the walk."""
    if not rules.hidden and any(part.startswith(".") for part in rel.parts):
        return True
    return _Globs(rules).excluded(rel.as_posix(), is_dir=False)
