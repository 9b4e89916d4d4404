"""The engine calls a caller may ask of the process serving the index: one per call of the
`Engine` and `RetrieverView` protocols (`cuerag.engine.surface`), derived from their signatures,
so a call added to the protocol is served with no word here and none can be forgotten. For each:
a pydantic model of its arguments built from the signature (validated on arrival, so nothing from
the socket reaches the engine unchecked), its result's type, the callbacks the owner plays back
to the caller over the connection, and how the owner runs it. The table's names are fixed when
this module loads: a request names one of its entries or is refused, never an attribute looked up
by name. Each entry is built from its signature the first time it is used, and kept: resolving a
signature imports the modules of the types it names, and a CLI query through a running server
would otherwise import those of every call (the engine's communities, its LLM client, its
indexing reports) before it sends its one request."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, get_args, get_type_hints

from pydantic import BaseModel, ConfigDict, TypeAdapter, create_model

from cuerag.engine.surface import ANNOTATION_TYPES, Engine, RetrieverView


class Peer(Protocol):
    """The caller, as the owner's run of its call sees it: each method stands in for the
    callback parameter of the same name (`CALLBACKS`)."""

    def progress(self, stage: str, done: int, total: int) -> None: ...

    def should_stop(self) -> bool: ...

    def check(self, path: Path) -> object: ...

    def wait_closed(self) -> None: ...


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NoArgs(Args):
    pass


class Hello(BaseModel):
    pid: int
    has_llm: bool
    # Whether a query is answered at once, or waits while the owner loads its models (an owner of
    # an older cuerag does not say: taken as loaded, as was assumed before).
    models_loaded: bool = True


class Request(BaseModel):
    """The message that opens a call; its arguments follow as a message of their own."""

    op: str
    settings: dict[str, str]  # cuerag.engine.sharing.wire.settings_digests
    callbacks: list[str] = []  # those of the call's callback parameters the caller passed


# The engine's calls that never cross: a caller closes its own connection, never the owner's
# engine, and a retriever is made by the owner at each of its calls ("retriever.*" below).
LOCAL = frozenset({"close", "retriever"})
# Callback parameters: the owner passes the `Peer` method of the same name, which carries them
# over the connection (progress out, cancellation in, the caller's verdict on a file in).
CALLBACKS = frozenset({"progress", "should_stop", "check"})
# Passed whether or not the caller gave one: a run also stops when its caller goes away (a killed
# CLI) or the owner is closing, and leaves the corpus as a killed run would.
ALWAYS = frozenset({"should_stop"})
VIEW = "retriever."  # the prefix of a retriever's calls


Target = Callable[[Engine, dict[str, Any], Peer], Any]


@dataclass(frozen=True)
class Op:
    args: type[Args]
    result: TypeAdapter[Any]
    target: Target  # runs the call on the owner's engine with its validated keyword arguments
    callbacks: frozenset[str] = frozenset()  # which of CALLBACKS the call takes
    paths: frozenset[str] = frozenset()  # arguments that name files (the caller makes them absolute)

    def run(self, engine: Engine, args: Args, peer: Peer, given: Collection[str]) -> Any:
        # Only what the caller set: the engine applies its own defaults, as to a local call.
        values = {name: getattr(args, name) for name in args.model_fields_set}
        for name in self.callbacks:
            if name in ALWAYS or name in given:
                values[name] = getattr(peer, name)
        return self.target(engine, values, peer)


def _parameters(function: Callable[..., Any]) -> list[inspect.Parameter]:
    params = list(inspect.signature(function).parameters.values())[1:]  # self
    assert all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params), function  # sent by name
    return params


def _hints(function: Callable[..., Any]) -> dict[str, Any]:
    """A protocol call's annotations (strings: `from __future__ import annotations`) resolved,
    the modules of the types they name imported now."""
    return get_type_hints(function, localns=ANNOTATION_TYPES)


def _names_files(hint: Any) -> bool:
    return hint is Path or any(_names_files(arg) for arg in get_args(hint))


def _op(
    name: str,
    params: list[inspect.Parameter],
    hints: dict[str, Any],
    result: Any,
    target: Target,
    scope: list[inspect.Parameter] | None = None,
) -> Op:
    """`params`: the call's, as its caller passes them; `scope`: the arguments its object was
    made with, which the caller adds (a retriever's corpus and filter)."""
    data = [p for p in (scope or []) + params if p.name not in CALLBACKS]
    fields: dict[str, Any] = {p.name: (hints[p.name], ... if p.default is p.empty else p.default) for p in data}
    return Op(
        args=create_model(f"{name}:args", __base__=Args, **fields),
        result=TypeAdapter(result),
        target=target,
        callbacks=frozenset(p.name for p in params if p.name in CALLBACKS),
        paths=frozenset(p.name for p in data if _names_files(hints[p.name])),
    )


def _members(protocol: type) -> tuple[list[str], list[str]]:
    """A protocol's public calls and properties."""
    public = {name: value for name, value in vars(protocol).items() if not name.startswith("_")}
    calls = [name for name, value in public.items() if inspect.isfunction(value)]
    return calls, [name for name, value in public.items() if isinstance(value, property)]


@functools.cache
def _engine_op(name: str) -> Op:
    method = getattr(Engine, name)
    hints = _hints(method)
    return _op(name, _parameters(method), hints, hints["return"], lambda e, v, p: getattr(e, name)(**v))


# A retriever's call carries the retriever's own arguments (corpus, filter) beside its own.
_SCOPE = _parameters(Engine.retriever)


def _view(engine: Engine, values: dict[str, Any]) -> RetrieverView:
    return engine.retriever(**{p.name: values.pop(p.name) for p in _SCOPE if p.name in values})


@functools.cache
def _view_op(name: str) -> Op:
    member = getattr(RetrieverView, name)
    hints = _hints(Engine.retriever)
    if isinstance(member, property):  # read when the retriever is made
        assert member.fget is not None, name
        result = _hints(member.fget)["return"]
        return _op(VIEW + name, [], hints, result, lambda e, v, p: getattr(_view(e, v), name), _SCOPE)
    own = _parameters(member)
    assert not {p.name for p in own} & {p.name for p in _SCOPE}, name
    hints |= _hints(member)
    return _op(VIEW + name, own, hints, hints["return"], lambda e, v, p: getattr(_view(e, v), name)(**v), _SCOPE)


def _standby(engine: Engine, values: dict[str, Any], peer: Peer) -> None:
    peer.wait_closed()  # held open while the caller is attached: its end tells of the owner's


class _Table(Mapping[str, Op]):
    """The calls served, by name: the names fixed, each entry built on its first use."""

    def __init__(self, entries: dict[str, Callable[[], Op]]) -> None:
        self._entries = entries

    def __getitem__(self, name: str) -> Op:
        return self._entries[name]()  # KeyError: no such call

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


def _table() -> _Table:
    calls, _ = _members(Engine)
    view_calls, view_properties = _members(RetrieverView)
    hello = Op(
        NoArgs,
        TypeAdapter(Hello),
        lambda e, v, p: Hello(pid=os.getpid(), has_llm=e.has_llm, models_loaded=e.models_loaded),
    )
    standby = Op(NoArgs, TypeAdapter(None), _standby)
    entries: dict[str, Callable[[], Op]] = {"hello": lambda: hello, "standby": lambda: standby}
    entries |= {name: functools.partial(_engine_op, name) for name in calls if name not in LOCAL}
    entries |= {VIEW + name: functools.partial(_view_op, name) for name in view_calls + view_properties}
    return _Table(entries)


OPS: Mapping[str, Op] = _table()
