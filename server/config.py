"""Server settings (environment prefix `CUERAG_MCP_`). Engine settings stay in `cuerag.Settings`."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ServerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CUERAG_MCP_", extra="ignore")

    transport: Literal["stdio", "http"] = Field(default="stdio", description="stdio, or streamable HTTP.")
    host: str = Field(default="127.0.0.1", description="HTTP bind address; loopback unless a token is set.")
    port: int = Field(default=8765, ge=0, le=65535)
    token: SecretStr | None = Field(default=None, description="Bearer token HTTP clients must send.")
    read_only: bool = Field(default=False, description="Hide the tools that write (index, delete).")
    allowed_roots: list[Path] = Field(
        default_factory=lambda: [Path.cwd()],
        description="Folders index_corpus may read from (JSON list in the environment).",
    )

    @model_validator(mode="after")
    def _token_off_loopback(self) -> ServerSettings:
        if self.transport == "http" and not is_loopback(self.host) and self.token is None:
            raise ValueError(
                f"binding HTTP to {self.host} exposes the server beyond this machine: set a bearer token "
                "(--token or CUERAG_MCP_TOKEN), or bind 127.0.0.1"
            )
        return self
