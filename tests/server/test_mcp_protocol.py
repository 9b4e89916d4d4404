"""What the server advertises, through the SDK's client at both protocol eras (the 2025-11-25
handshake and 2026-07-28): only the capabilities it serves (tools, resources, the research prompt,
completions; no change notifications or subscriptions, since nothing ever changes or is watched
mid-session), and cache hints on the lists fixed when the server is built. No engine is needed to
list, so none is built; completions and the prompt against a real index are in
tests/server/test_mcp_documents.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from cuerag import Settings
from server.app import build_server
from server.config import ServerSettings
from tests.tools.test_mcp_schemas import _NoEngine

pytestmark = pytest.mark.anyio


@pytest.fixture
def server(tmp_path: Path) -> MCPServer:
    return build_server(
        Settings(data_dir=tmp_path), ServerSettings(allowed_roots=[tmp_path]), engine_factory=lambda _: _NoEngine()
    )  # type: ignore[arg-type,return-value]


@pytest.fixture(params=["auto", "legacy"], ids=["2026-07-28", "2025-11-25"])
async def client(request: pytest.FixtureRequest, server: MCPServer) -> AsyncIterator[Client]:
    async with Client(server, mode=request.param) as connected:
        yield connected


async def test_capabilities_are_only_what_is_served(client: Client) -> None:
    caps = client.server_capabilities
    assert caps.tools is not None and not caps.tools.list_changed
    assert caps.resources is not None and not caps.resources.subscribe and not caps.resources.list_changed
    assert caps.prompts is not None and not caps.prompts.list_changed
    assert caps.completions is not None
    # The prompts capability is there because a prompt is.
    assert [p.name for p in (await client.list_prompts()).prompts] == ["research", "sensemaking"]


async def test_fixed_lists_may_be_cached(server: MCPServer) -> None:
    async with Client(server) as client:  # the 2026-07-28 era, where results carry cache hints
        assert client.protocol_version == "2026-07-28"
        for listed in (
            await client.list_tools(),
            await client.list_prompts(),
            await client.list_resources(),
            await client.list_resource_templates(),
        ):
            assert listed.ttl_ms == 3_600_000, type(listed).__name__
