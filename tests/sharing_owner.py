"""A stand-in for the process that serves a data directory, in a process of its own, so a test can
stop it (SIGSTOP) as a user's Ctrl-Z or a debugger would, and see what the processes attached to
it do. No models and no store: its engine answers `corpora` and `sizes` at once, except
`sizes("sleep N")`, which says "started" on its stdout and answers after N seconds (a long call).
Shared by tests/engine/test_sharing_liveness.py and tests/server/test_sharing_stopped.py.

Run as `python tests/sharing_owner.py DATA_DIR`: it says "ready" once it listens, and ends when
its stdin closes (its test ended) or it is killed."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cuerag.config import Settings
from cuerag.engine.sharing.owner import Owner
from cuerag.engine.sharing.place import place_of

ROOT = Path(__file__).parents[1]  # the checkout: its cuerag, not an installed one
_SAID_S = 120.0  # the longest a test waits for a line: its start, on a loaded machine


class _Engine:
    has_llm = False
    models_loaded = True

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def corpora(self) -> list[object]:
        return []

    def sizes(self, corpus: str) -> dict[str, int]:
        if corpus.startswith("sleep "):
            print("started", flush=True)
            time.sleep(float(corpus.split()[1]))
        return {"documents": len(corpus)}


@dataclass
class Elsewhere:
    """The stand-in owner's process."""

    process: subprocess.Popen[str]

    @property
    def pid(self) -> int:
        return self.process.pid

    def said(self) -> str:
        """Its next line on stdout, waited for at most `_SAID_S` (a test must not hang on it)."""
        assert self.process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            assert selector.select(_SAID_S), "the stand-in owner said nothing"
        return self.process.stdout.readline().strip()

    def stop(self) -> None:
        os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.pid, signal.SIGCONT)


@contextlib.contextmanager
def served_elsewhere(data_dir: Path) -> Iterator[Elsewhere]:
    """A stand-in owner serving `data_dir`, in its own process, with this one's environment (so the
    settings both make agree); continued and ended when the block ends."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen(
        [sys.executable, __file__, str(data_dir)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    owner = Elsewhere(process)
    try:
        assert owner.said() == "ready"
        yield owner
    finally:
        with contextlib.suppress(ProcessLookupError):
            owner.resume()
        process.kill()
        process.wait(60)
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                pipe.close()
        place_of(data_dir).key_file.unlink(missing_ok=True)


def _serve(data_dir: Path) -> None:
    settings = Settings(data_dir=data_dir)
    Owner(_Engine(settings), place_of(data_dir))  # type: ignore[arg-type]  # the calls a test makes
    print("ready", flush=True)
    sys.stdin.read()  # until the test ends


if __name__ == "__main__":
    _serve(Path(sys.argv[1]))
