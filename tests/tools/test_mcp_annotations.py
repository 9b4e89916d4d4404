"""Tool annotations as clients act on them (issue 31): polling a job is read-only, so clients in
plan, ask or auto modes do not ask approval on every poll; stopping one is `cancel_job`, a write
that destroys nothing and can be repeated; and a tool that can hand text to an LLM off this machine
says it is open-world, which it is only when the server has such an LLM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cuerag import Settings
from tests.tools.test_mcp_schemas import listed_tools
from tools.common import llm_is_remote

pytestmark = pytest.mark.anyio

REMOTE = {"llm_provider": "anthropic", "llm_model": "m"}  # the provider's own API
LOCAL = {"llm_provider": "openai", "llm_model": "m", "llm_base_url": "http://127.0.0.1:8080/v1"}


async def open_world(tmp_path: Path, **engine: Any) -> set[str]:
    tools = await listed_tools(tmp_path, **engine)
    assert all(t.annotations is not None and t.annotations.open_world_hint is not None for t in tools)
    return {t.name for t in tools if t.annotations and t.annotations.open_world_hint}


async def test_job_status_is_read_only_and_cancel_job_is_a_safe_write(tmp_path: Path) -> None:
    tools = {t.name: t for t in await listed_tools(tmp_path)}
    status, cancel = tools["job_status"].annotations, tools["cancel_job"].annotations
    assert status is not None and cancel is not None
    assert (status.read_only_hint, status.open_world_hint) == (True, False)
    assert set(tools["job_status"].input_schema["properties"]) == {"job_id", "wait_s"}
    assert (cancel.read_only_hint, cancel.destructive_hint, cancel.idempotent_hint, cancel.open_world_hint) == (
        False,
        False,
        True,
        False,
    )
    assert tools["cancel_job"].input_schema["required"] == ["job_id"]


async def test_no_llm_no_open_world(tmp_path: Path) -> None:
    assert await open_world(tmp_path) == set()


async def test_a_remote_llm_makes_the_tools_that_send_it_text_open_world(tmp_path: Path) -> None:
    # answer sends the passages; q_iter's llm_entities the query; indexing sends chunks only when
    # hybrid extraction is on (alpha > 0).
    assert await open_world(tmp_path / "a", **REMOTE) == {"answer", "q_iter"}
    assert await open_world(tmp_path / "b", **REMOTE, alpha=0.3) == {"answer", "q_iter", "index_corpus"}


async def test_an_llm_on_this_machine_keeps_the_world_closed(tmp_path: Path) -> None:
    assert await open_world(tmp_path, **LOCAL, alpha=0.3) == set()


@pytest.mark.parametrize(
    ("base_url", "remote"),
    [
        (None, True),
        ("https://api.example.com/v1", True),
        ("http://10.0.0.5:8000/v1", True),  # another machine on the network
        ("http://localhost:8080/v1", False),
        ("http://127.0.0.1:8080/v1", False),
        ("http://[::1]:8080/v1", False),
        ("http://llm.localhost/v1", False),
    ],
)
def test_which_llm_endpoints_are_remote(base_url: str | None, remote: bool) -> None:
    settings = Settings(llm_provider="openai", llm_model="m", llm_base_url=base_url)
    assert llm_is_remote(settings) is remote
    assert llm_is_remote(Settings()) is False  # no LLM at all
