"""Code that must finish at once, run where a regression fails instead of hanging: a child
interpreter with a time bound (a regular expression that backtracks holds the GIL, so a thread
could not be given up on)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).parents[1]


def finishes_in_a_child(code: str, seconds: float = 60) -> None:
    """Run `code` in a child interpreter from the repository's root; it must print `done` last
    within `seconds` (a bound for a regression to fail, not a speed target: it takes milliseconds)."""
    done = subprocess.run(
        [sys.executable, "-c", code + "\nprint('done')\n"],
        capture_output=True,
        text=True,
        timeout=seconds,
        check=False,
        cwd=REPO,
    )
    assert done.stdout.strip().endswith("done"), done.stderr[-2000:]
