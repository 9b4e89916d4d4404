"""`cuerag-mcp`: run the MCP server over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from pydantic import ValidationError

from cuerag import CueRagError, Settings
from server.app import build_server
from server.auth import BearerTokenMiddleware
from server.config import ServerSettings
from server.local_users import ThisUserOnly, socket_tables_readable
from server.request_reading import WholeBodies, timed_h11
from server.security import transport_security

log = logging.getLogger(__name__)


def parse_args(argv: list[str] | None = None) -> tuple[Settings, ServerSettings]:
    parser = argparse.ArgumentParser(prog="cuerag-mcp", description="CUE-RAG retrieval as MCP tools.")
    parser.add_argument("--transport", choices=["stdio", "http"])
    parser.add_argument("--host", help="HTTP bind address (default 127.0.0.1).")
    parser.add_argument("--port", type=int, help="HTTP port (default 8765).")
    parser.add_argument("--token", help="Bearer token required from HTTP clients [env CUERAG_MCP_TOKEN].")
    parser.add_argument(
        "--read-only",
        action="store_true",
        default=None,
        help="Hide the tools that write (index, delete, cancel) and job_status.",
    )
    parser.add_argument(
        "--stepwise",
        action="store_true",
        default=None,
        help="Also list the step-by-step tools (link_entities, search_units, expand_entity, get_units).",
    )
    parser.add_argument(
        "--allowed-root",
        action="append",
        dest="allowed_roots",
        help="Folder index_corpus may read (repeatable); none: indexing by path is off.",
    )
    parser.add_argument(
        "--allowed-origin",
        action="append",
        dest="allowed_origins",
        help="Browser origin allowed to call the HTTP server, e.g. https://app.example (repeatable).",
    )
    parser.add_argument(
        "--describe",
        action="append",
        metavar="NAME=TEXT",
        help="What corpus NAME holds and when to search it (repeatable) [env CUERAG_MCP_CORPUS_DESCRIPTIONS].",
    )
    parser.add_argument("--data-dir", help="Where indexes live [env CUERAG_DATA_DIR].")
    args = parser.parse_args(argv)
    if args.token is not None:
        # Not refused (it is the documented flag, and scripts use it), but said: the one secret
        # between other users and the index should not sit where all of them can read it.
        log.warning(
            "--token puts the token in this process's command line, which every user of this machine can "
            "read (ps, /proc/PID/cmdline): pass it in CUERAG_MCP_TOKEN instead"
        )
    server_overrides: dict[str, Any] = {
        k: v
        for k, v in vars(args).items()
        if v is not None
        and k in {"transport", "host", "port", "token", "read_only", "stepwise", "allowed_roots", "allowed_origins"}
    }
    if args.describe:
        server_overrides["corpus_descriptions"] = _descriptions(args.describe)
    engine_overrides: dict[str, Any] = {"data_dir": args.data_dir} if args.data_dir else {}
    return Settings(**engine_overrides), ServerSettings(**server_overrides)


def setting_problems(exc: ValidationError) -> str:
    """What is wrong with the settings given, each as `name: why`, never the value."""
    return "; ".join(
        f"{'.'.join(str(part) for part in error['loc']) or 'settings'}: {error['msg'].removeprefix('Value error, ')}"
        for error in exc.errors(include_input=False, include_url=False)
    )


def _descriptions(pairs: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep:
            raise ValueError(f"--describe takes NAME=TEXT, got {pair[:80]!r}")
        found[name.strip()] = text
    return found


def main(argv: list[str] | None = None) -> None:
    # Logs go to stderr: on stdio, stdout carries the protocol.
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    try:
        engine_settings, server_settings = parse_args(argv)
    except ValidationError as exc:
        # One line per bad setting, without the value given: pydantic's own text quotes it (the
        # bearer token too short to accept is still the user's secret) and adds a link.
        print(f"cuerag-mcp: {setting_problems(exc)}", file=sys.stderr)
        raise SystemExit(2) from None
    except ValueError as exc:
        print(f"cuerag-mcp: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
    try:
        _serve(engine_settings, server_settings)
    except BaseException as exc:
        cause = _startup_cause(exc)
        if cause is None:
            raise
        # The engine opens in the lifespan; what stops it (a read-only or full disk, an index open
        # in another process) is the user's to fix, and one line says what.
        print(f"cuerag-mcp: cannot serve: {cause}", file=sys.stderr)
        raise SystemExit(1) from exc


def _startup_cause(exc: BaseException) -> str | None:
    """The message of the engine or filesystem error inside what the server raised (the task
    groups wrap it), or None for anything else."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if (found := _startup_cause(inner)) is not None:
                return found
        return None
    if isinstance(exc, CueRagError):
        return str(exc)
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc} ({exc.filename})" if exc.filename else str(exc.strerror or exc)
    return None


def _serve(engine_settings: Settings, server_settings: ServerSettings) -> None:
    server = build_server(engine_settings, server_settings)
    if server_settings.transport == "stdio":
        server.run()
        return
    import uvicorn

    app: Any = server.streamable_http_app(
        host=server_settings.host, transport_security=transport_security(server_settings)
    )
    # The token is checked on the headers, before a body is read (and buffered) for the MCP app.
    app = WholeBodies(app)
    if server_settings.token is not None:
        app = BearerTokenMiddleware(app, server_settings.token.get_secret_value())
    else:
        # Loopback (the settings refuse any other bind without a token) is open to every account
        # on the machine: without a token, only this user's clients are admitted.
        app = ThisUserOnly(app)
        if not socket_tables_readable():
            log.warning(
                "HTTP without a token: the clients of other users of this machine cannot be told apart "
                "here (no /proc/net/tcp) and are admitted; set a token (--token) to keep them out"
            )
    uvicorn.run(
        app,
        host=server_settings.host,
        port=server_settings.port,
        log_level="warning",
        http=timed_h11(server_settings.request_timeout_s),
    )


if __name__ == "__main__":
    main()
