"""The real `cuerag-mcp` driven by clients nobody here wrote, from npm (pinned in
tests/clients/package.json, installed by `scripts/setup.sh dev`): the TypeScript SDK's client
(tests/clients/drive.mjs, one session) and the MCP Inspector's CLI (a connection per call, as a
user runs it), over stdio and over streamable HTTP with a bearer token on loopback. Each runs the
plan of tests/mcp_plan.py: every tool, the resources listed, the document template read, the
research prompt and (the TypeScript client; the Inspector CLI has no such command) the
completions; every answer must pass the SDK's own result schemas and the plan's checks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLE, SAMPLE_CORPUS, server_env
from mcp_plan import check, plan, resolve

from cuerag import CueRag, Settings
from cuerag.models.loading import Models
from tests.server.test_mcp_http import TOKEN, running_server

ROOT = Path(__file__).parent.parent.parent
CLIENTS = ROOT / "tests" / "clients"
NODE_MODULES = CLIENTS / "node_modules"
# Inspector CLI 1.0.3 reads its own package.json at "../package.json" only when that path exists
# relative to the working directory (else it looks one level too high and stops): it runs from its
# build folder.
INSPECTOR = NODE_MODULES / "@modelcontextprotocol" / "inspector-cli" / "build"
CALL_SECONDS = 300
# What the CLI says when a call is worth another try (see test_inspector_cli).
RETRIED = ("Request timed out", "Connection closed")
RETRIES = 3


def _node() -> str:
    node = shutil.which("node")
    if node is None or not (NODE_MODULES / "@modelcontextprotocol" / "sdk").is_dir():
        pytest.fail("node and tests/clients/node_modules are needed: run `bash scripts/setup.sh dev`")
    return node


@pytest.fixture(scope="module")
def data_dir(models: Models, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with the sample corpus indexed, closed before any server opens it."""
    data = tmp_path_factory.mktemp("clients") / "data"
    engine = CueRag(Settings(data_dir=data), models=models)
    try:
        engine.index_paths(SAMPLE, [SAMPLE_CORPUS])
    finally:
        engine.close()
    return data


@pytest.fixture(scope="module")
def http_url(data_dir: Path) -> Iterator[str]:
    # running_server serves `<tmp>/data`: the indexed directory's parent.
    with running_server(data_dir.parent, "--token", TOKEN, "--stepwise") as url:
        yield url


def _stdio_command(data_dir: Path) -> list[str]:
    # --stepwise: every tool is driven, the step-by-step ones too.
    return [sys.executable, "-m", "server.main", "--data-dir", str(data_dir), "--stepwise"]


def _env() -> dict[str, str]:
    # The servers these clients start import this checkout, wherever they run.
    return {**server_env(), "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def _check_all(steps: list[dict[str, Any]], results: list[dict[str, Any]]) -> None:
    assert len(results) == len(steps)
    for step, result in zip(steps, results, strict=True):
        check(step, result)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_typescript_sdk_client(transport: str, data_dir: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    node = _node()
    steps = plan(one_session=True, completions=True)
    if transport == "stdio":
        command, *args = _stdio_command(data_dir)
        spec: dict[str, Any] = {"type": "stdio", "command": command, "args": args, "env": _env()}
    else:
        spec = {"type": "http", "url": request.getfixturevalue("http_url"), "token": TOKEN}
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps({"transport": spec, "steps": steps}))
    done = subprocess.run(
        [node, "drive.mjs", str(plan_file)],
        cwd=CLIENTS,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=CALL_SECONDS * 2,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert "fatal" not in report, report["fatal"] + done.stderr[-3000:]
    assert report["server"]["name"] == "cuerag"
    failed = [(s["method"], s["params"], s["error"]) for s in report["steps"] if "error" in s]
    assert not failed, failed
    _check_all(steps, [s["result"] for s in report["steps"]])


def _inspector_args(step: dict[str, Any]) -> list[str]:
    """The Inspector CLI's options for one step."""
    params = step.get("params", {})
    args = ["--method", step["method"]]
    if step["method"] == "tools/call":
        args += ["--tool-name", params["name"]]
        # Each value as JSON: the CLI parses it back (a string stays a string, a list a list).
        for key, value in params["arguments"].items():
            args += ["--tool-arg", f"{key}={json.dumps(value)}"]
    elif step["method"] == "resources/read":
        args += ["--uri", params["uri"]]
    elif step["method"] == "prompts/get":
        args += ["--prompt-name", params["name"], "--prompt-args"]
        args += [f"{k}={json.dumps(v)}" for k, v in params["arguments"].items()]
    return args


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_inspector_cli(transport: str, data_dir: Path, request: pytest.FixtureRequest) -> None:
    node = _node()
    # Over stdio every call starts a server of its own, so no job outlives the call that starts it.
    steps = plan(one_session=transport == "http", completions=False)
    if transport == "stdio":
        command, *args = _stdio_command(data_dir)
        target, after = [command], ["--", *args]
    else:
        target = [request.getfixturevalue("http_url"), "--transport", "http"]
        after = ["--header", f"Authorization: Bearer {TOKEN}"]
    results: list[dict[str, Any]] = []
    for step in steps:
        resolved = {**step, "params": resolve(step.get("params", {}), results)}
        command = [node, str(INSPECTOR / "index.js"), *target, *_inspector_args(resolved), *after]
        done = _inspect(command)
        for _ in range(RETRIES):
            if done.returncode == 0 or not any(m in done.stderr for m in RETRIED):
                break
            # The CLI gives up after the SDK's fixed 60 s and has no option to wait longer (a
            # server loading its models on a loaded 2-core machine can pass that); over stdio the
            # previous call's server may still hold the embedded index while it exits, and the new
            # one then stops at start ("Connection closed"). Neither says anything of the server.
            time.sleep(3)
            done = _inspect(command)
        assert done.returncode == 0, (resolved, done.stdout[-2000:], done.stderr[-3000:])
        results.append(json.loads(done.stdout))
    _check_all(steps, results)


def _inspect(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=INSPECTOR, env=_env(), capture_output=True, text=True, timeout=CALL_SECONDS, check=False
    )
