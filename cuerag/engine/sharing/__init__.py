"""One index, many processes: the first process to open a data directory's embedded index holds
it and serves its engine to later ones over a local socket; they attach instead of failing, and
when the holder ends (even killed) one of them takes its place. Why this design, and its limits:
docs/sharing.md."""

from __future__ import annotations

from cuerag.config import Settings
from cuerag.engine.sharing.owner import MakeEngine, own_engine
from cuerag.engine.sharing.remote import RemoteEngine, own_or_attach
from cuerag.engine.surface import Engine


def shares(settings: Settings) -> bool:
    """Whether these settings share the index: the embedded Rust store (the one that locks its
    directory), written to, with sharing on. A read-only open and a Qdrant server need none."""
    return settings.share and not settings.read_only and not settings.qdrant_url and settings.store == "edge"


def open_engine(settings: Settings, *, standby: bool = False, make: MakeEngine = own_engine) -> Engine:
    """The engine this process should use: its own (serving the others when sharing), or the
    owner's. `standby`: a long-lived process takes over as soon as the owner ends (a server, a
    watch), not at its next call. `make` opens this process's own engine (tests give it models)."""
    if not shares(settings):
        return make(settings)
    return own_or_attach(settings, standby=standby, make=make)


__all__ = ["RemoteEngine", "open_engine", "shares"]
