"""What the kernel tells, and bounds, at either end of a sharing connection: the socket under a
`multiprocessing.connection.Connection` (without a second descriptor), the peer's credentials
(SO_PEERCRED), a bound on each read and write, and whether a process is stopped.

The bounds are socket options (SO_RCVTIMEO, SO_SNDTIMEO), not `settimeout`, which would make the
descriptor non-blocking under the connection's own reads: a read or write that waits past the
bound fails with `BlockingIOError` (EAGAIN), which each end turns into its own answer."""

from __future__ import annotations

import contextlib
import select
import socket
import struct
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path

_CREDS = struct.Struct("3i")  # struct ucred: pid, uid, gid
_TIMEVAL = struct.Struct("ll")


@contextlib.contextmanager
def socket_of(conn: Connection) -> Iterator[socket.socket]:
    """The connection's socket, without a second descriptor (a dup fails when they have run out)
    and left open for the connection."""
    sock = socket.socket(fileno=conn.fileno())
    try:
        yield sock
    finally:
        sock.detach()


def peer_of(sock: socket.socket) -> tuple[int, int] | None:
    """The peer's pid and uid, from the kernel (SO_PEERCRED): for a caller, the owner's process
    (the one that listens); None where the system has no such option. A pid of 0: the peer runs in
    a pid namespace this process cannot see."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    pid, uid, _gid = _CREDS.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CREDS.size))
    return pid, uid


def bound_socket(sock: socket.socket, seconds: float) -> None:
    """Bound each read and write of the socket (and, for a Unix socket, a connect that waits on
    a full backlog) to `seconds`; 0: no bound."""
    whole = int(seconds)
    value = _TIMEVAL.pack(whole, int((seconds - whole) * 1_000_000))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)


def bound(conn: Connection, seconds: float) -> None:
    """`bound_socket` of a connection's socket."""
    with socket_of(conn) as sock:
        bound_socket(sock, seconds)


def writable(conn: Connection, seconds: float) -> bool:
    """Whether a short message can be written to the connection without waiting, waiting at most
    `seconds` for it. A Unix stream socket is writable while at most a quarter of its send buffer
    is taken, so a message of a few hundred bytes then goes through whole at once. A peer that
    reads nothing (stopped, hung) fills the buffer, and a plain write would wait as long as it."""
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLOUT)
    return any(events & select.POLLOUT for _fd, events in poller.poll(int(seconds * 1000)))


def hang_up(conn: Connection) -> None:
    """End a connection another thread may be blocked reading: a shutdown wakes that read (a
    close alone would not) and tells the peer at once."""
    with contextlib.suppress(OSError), socket_of(conn) as sock:
        sock.shutdown(socket.SHUT_RDWR)


def stopped(pid: int) -> bool:
    """Whether the process is stopped: by a signal (SIGSTOP, Ctrl-Z: state T) or a debugger
    (tracing stop: t), as /proc says. False where that cannot be read (no /proc, another system,
    the process gone): a process that ended closed its sockets, which its peer sees at once."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    # "pid (name) state ...": the name may hold spaces and parentheses; the state follows the last.
    state = stat[stat.rfind(b")") + 2 :][:1]
    return state in (b"T", b"t")
