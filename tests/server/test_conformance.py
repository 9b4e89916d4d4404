"""The official MCP conformance suite (@modelcontextprotocol/conformance, npm, pinned in
tests/clients/package.json) against the real server over streamable HTTP on loopback (its CLI sends
no Authorization header, so the server runs without a token, as loopback allows). The scenarios that
call the SDK's own test server's fixtures, or a capability this server does not advertise, fail by
design: tests/clients/conformance-baseline.json lists each with why, and any other outcome fails."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.server.test_mcp_http import running_server

ROOT = Path(__file__).parent.parent.parent
CLIENTS = ROOT / "tests" / "clients"
CONFORMANCE = CLIENTS / "node_modules" / ".bin" / "conformance"
BASELINE = json.loads((CLIENTS / "conformance-baseline.json").read_text())["expected_failures"]


def test_conformance_suite_fails_only_the_baseline(tmp_path: Path) -> None:
    if shutil.which("node") is None or not CONFORMANCE.exists():
        pytest.fail("node and tests/clients/node_modules are needed: run `bash scripts/setup.sh dev`")
    out = tmp_path / "results"
    with running_server(tmp_path) as url:
        done = subprocess.run(
            [CONFORMANCE, "server", "--url", url, "--suite", "all", "-o", out],
            cwd=CLIENTS,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    outcomes: dict[str, list[str]] = {}
    for checks in out.glob("server-*/checks.json"):
        scenario = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", checks.parent.name.removeprefix("server-"))
        outcomes[scenario] = [c["status"] for c in json.loads(checks.read_text())]
    assert len(outcomes) >= 30, done.stdout[-3000:] + done.stderr[-3000:]
    failed = {s for s, statuses in outcomes.items() if "FAILURE" in statuses}
    assert failed - set(BASELINE) == set(), "new failures: see the scenario's checks.json"
    assert set(BASELINE) - failed == set(), "these pass now: drop them from the baseline"
