"""The install a user does, end to end: the wheel holds the three packages, both commands and the
package data; a wheelhouse built once (the CPU torch, as the machine's pip finds it) installs the
wheel into a fresh virtualenv with no index and, where this machine can make one, no network at all
(a network namespace), and its `cuerag-mcp` indexes the sample corpus shipped in the wheel and
answers the toy question; and each client snippet of README.md (Claude Desktop, Claude Code,
VS Code, Cursor: `uvx` from the wheel) is launched as written, placeholders filled, and lists its
tools over stdio. Slow (a 2 GB environment installed twice): it builds everything once per module."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters, stdio_client

from tools import TOOLS

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).parent.parent.parent
PIP_SECONDS = 1800
TOY = "When did the 1979-80 European Cup winner win the FA Cup?"
SNIPPETS = ("Claude Desktop", "Claude Code", "VS Code", "Cursor")


def _isolated_env(**extra: str) -> dict[str, str]:
    """The environment of an offline install: none of this machine's pip or uv settings (its
    extra indexes and find-links would make "from local files" untrue), no developer settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "CUERAG_", "PYTHON", "VIRTUAL_ENV"))}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "UV_NO_CONFIG": "1", "HF_HUB_OFFLINE": "1", **extra}


def _offline() -> list[str]:
    """A prefix that runs a command without network, where this machine allows one."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True, check=False).returncode == 0:
        return [unshare, "-n"]
    return []


def _run(args: list[str], **kwargs: Any) -> None:
    done = subprocess.run(args, capture_output=True, text=True, timeout=PIP_SECONDS, check=False, **kwargs)
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-4000:])


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(ROOT)])
    (built,) = out.glob("cuerag-*.whl")
    return built


@pytest.fixture(scope="module")
def wheelhouse(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every wheel the project needs, fetched once with this machine's pip settings; torch pinned
    as scripts/setup.sh pins it (the CPU build here)."""
    house = tmp_path_factory.mktemp("wheelhouse")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "-w", str(house), str(wheel), "torch==2.13.0"])
    return house


def test_the_wheel_holds_the_packages_commands_and_data(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n for n in names if n.endswith(".dist-info/entry_points.txt")).rsplit("/", 1)[0]
        top_level = archive.read(f"{info}/top_level.txt").decode().split()
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    # The three packages and nothing else (no tests, benchmarks or scripts in site-packages).
    assert sorted(top_level) == ["cuerag", "server", "tools"]
    assert {n.split("/")[0] for n in names} == {"cuerag", "server", "tools", info}
    assert "cuerag = cuerag.cli.app:main" in entry_points
    assert "cuerag-mcp = server.main:main" in entry_points
    assert {"cuerag/data/sample_corpus.json", "cuerag/data/qdrant.yaml"} <= set(names)


async def test_offline_venv_installs_and_serves(wheelhouse: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], env=_isolated_env())
    _run(
        [
            *_offline(),
            str(venv / "bin" / "pip"),
            "install",
            "-q",
            "--no-index",
            "--find-links",
            str(wheelhouse),
            "cuerag",
        ],
        env=_isolated_env(),
        cwd=tmp_path,  # not the checkout: nothing of it may be imported
    )
    site = next((venv / "lib").glob("python3*/site-packages"))
    sample = site / "cuerag" / "data" / "sample_corpus.json"
    assert sample.is_file()
    offline = _offline()
    command = [*offline, str(venv / "bin" / "cuerag-mcp"), "--data-dir", str(tmp_path / "data")]
    params = StdioServerParameters(
        command=command[0],
        args=[*command[1:], "--allowed-root", str(sample.parent)],
        cwd=str(tmp_path),
        env=_isolated_env(),
    )
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            assert listed == {t.name for t in TOOLS if not (t.needs_llm or t.stepwise)}  # no LLM, no --stepwise
            indexed = await client.call_tool("index_corpus", {"corpus": "sample", "paths": [str(sample)]})
            assert not indexed.is_error, indexed.content
            found = await client.call_tool("q_iter", {"corpus": "sample", "query": TOY})
            assert not found.is_error, found.content
            assert "nottingham-forest-fa-cup" in [h["doc_id"] for h in found.structured_content["chunks"]]  # type: ignore[index]


def _snippet_commands(readme: str) -> dict[str, list[str]]:
    """Each client's server command line as README.md gives it."""
    commands: dict[str, list[str]] = {}
    for client in SNIPPETS:
        found = re.search(rf"\*\*{re.escape(client)}\*\*.*?```(json|bash)\n(.*?)```", readme, re.S)
        assert found, f"no snippet for {client}"
        kind, body = found.groups()
        if kind == "bash":
            line = next(x for x in body.splitlines() if x.startswith("claude mcp add cuerag -- "))
            commands[client] = shlex.split(line.split(" -- ", 1)[1])
        else:
            config = json.loads(body)
            server = (config.get("mcpServers") or config["servers"])["cuerag"]
            commands[client] = [server["command"], *server["args"]]
    return commands


@pytest.fixture(scope="module")
def uv_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("uv-cache")


@pytest.mark.parametrize("client", SNIPPETS)
async def test_readme_snippet_launches(
    client: str, wheel: Path, wheelhouse: Path, uv_cache: Path, tmp_path: Path
) -> None:
    command = _snippet_commands((ROOT / "README.md").read_text(encoding="utf-8"))[client]
    filled = [
        arg.replace("/path/to/cuerag-0.1.0-py3-none-any.whl", str(wheelhouse / wheel.name))
        .replace("/path/to/indexes", str(tmp_path / "data"))
        .replace("/path/to/documents", str(tmp_path))
        for arg in command
    ]
    assert not [a for a in filled if "/path/to" in a], filled
    uvx = shutil.which("uvx", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    assert uvx and filled[0] == "uvx", filled
    # uv takes everything from the wheelhouse, offline, as a user's machine without network would.
    env = _isolated_env(
        UV_OFFLINE="1",
        UV_NO_INDEX="1",
        UV_FIND_LINKS=str(wheelhouse),
        UV_CACHE_DIR=str(uv_cache),
        UV_PYTHON=sys.executable,
    )
    offline = _offline()
    params = StdioServerParameters(
        command=(offline or [uvx])[0],
        args=[*offline[1:], *([uvx] if offline else []), *filled[1:]],
        cwd=str(tmp_path),
        env=env,
    )
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as session:
            names = {t.name for t in (await session.list_tools()).tools}
    assert {"q_iter", "index_corpus", "read_document"} <= names, (tmp_path / "stderr.log").read_text()[-3000:]
