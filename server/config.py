"""Server settings (environment prefix `CUERAG_MCP_`). Engine settings stay in `cuerag.Settings`."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# A bearer token is the only thing between the network and the index, and the server answers as
# fast as it can: a short one can be guessed. 16 characters is 96 bits as base64 and 64 as hex
# (`openssl rand -hex 16` gives 32). An empty one is refused for another reason: `--token "$TOKEN"`
# with TOKEN unset reads as "no auth" to the shell user and must not start a server at all.
MIN_TOKEN_LENGTH = 16
# One corpus's description, in characters: a sentence or two, read by every client in tools/list.
MAX_CORPUS_DESCRIPTION = 300


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
    # No default folder: desktop hosts start stdio servers in whatever directory they like (often
    # `/` or the home folder), so "the working directory" would open the whole disk to an agent.
    allowed_roots: list[Path] = Field(
        default_factory=list,
        description="Folders index_corpus may read from (JSON list in the environment); none: "
        "indexing by path is off and only inline documents are accepted.",
    )
    stepwise: bool = Field(
        default=False,
        description="Also list the step-by-step tools (link_entities, search_units, expand_entity, get_units).",
    )
    # The operator says what each corpus holds (as mcp-server-qdrant lets one describe a
    # collection): list_corpora shows it, and the descriptions of the tools that take a corpus
    # carry it, bounded (`tools.corpus_notes`), for clients that never call list_corpora.
    corpus_descriptions: dict[str, str] = Field(
        default_factory=dict,
        description="What each corpus holds and when to search it, by corpus name (JSON object in the "
        "environment; --describe NAME=TEXT).",
    )
    max_jobs: int = Field(default=4, ge=1, le=64, description="Background jobs (index runs, watches) run at once.")
    kept_jobs: int = Field(default=32, ge=1, le=10_000, description="Finished jobs remembered for job_status.")
    request_timeout_s: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="Seconds an HTTP client has to send a request's headers and body, from its first byte.",
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Browser origins (scheme://host[:port]) allowed to call the HTTP server, besides "
        "the bound address itself (JSON list in the environment).",
    )

    @field_validator("corpus_descriptions")
    @classmethod
    def _descriptions_bounded(cls, found: dict[str, str]) -> dict[str, str]:
        for name, text in found.items():
            if not 1 <= len(name) <= 64 or not text.strip() or len(text) > MAX_CORPUS_DESCRIPTION:
                raise ValueError(
                    f"a corpus description needs a corpus name (1-64 characters) and 1-{MAX_CORPUS_DESCRIPTION} "
                    f"characters of text; got {name[:64]!r} with {len(text)} characters"
                )
        return {name: " ".join(text.split()) for name, text in found.items()}

    @field_validator("token")
    @classmethod
    def _token_long_enough(cls, token: SecretStr | None) -> SecretStr | None:
        if token is None:
            return None
        value = token.get_secret_value()
        if not value.strip():
            raise ValueError(
                "the bearer token is empty: give a real one (e.g. `openssl rand -hex 16`), or leave "
                "--token and CUERAG_MCP_TOKEN unset to serve loopback only"
            )
        if value != value.strip() or len(value) < MIN_TOKEN_LENGTH:
            raise ValueError(
                f"the bearer token must be at least {MIN_TOKEN_LENGTH} characters without leading or "
                "trailing spaces (e.g. `openssl rand -hex 16`)"
            )
        return token

    @model_validator(mode="after")
    def _token_off_loopback(self) -> ServerSettings:
        if self.transport == "http" and not is_loopback(self.host) and self.token is None:
            raise ValueError(
                f"binding HTTP to {self.host} exposes the server beyond this machine: set a bearer token "
                "(--token or CUERAG_MCP_TOKEN), or bind 127.0.0.1"
            )
        return self
