"""Chat LLMs behind one small interface: OpenAI-compatible endpoints (OpenAI, vLLM, Ollama, the
llama.cpp server) through `openai`, and Anthropic through `anthropic`.

`LLM` adds what every caller needs around a provider: a persistent response cache (an
interrupted index run resumes without paying twice), retries with backoff on transient errors
(connection failures, timeouts, 408/409/429 and 5xx answers). Each answer says what it cost, so
callers add up their own usage.
The SDKs' own retries are switched off so that tenacity is the one place retries happen.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from cuerag.config import Settings
from cuerag.errors import LLMError, LLMRefusedError, ParameterError
from cuerag.llm.cache import ResponseCache
from cuerag.llm.redact import mask_secrets, redact_urls_in, secret_forms

log = logging.getLogger(__name__)


class Completion(BaseModel):
    """One answer from a model, with what it cost (nothing when it came from the cache)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    truncated: bool = False  # stopped by max_tokens, not by the model
    cached: bool = False

    def usage(self) -> LLMUsage:
        if self.cached:
            return LLMUsage(cached_calls=1)
        return LLMUsage(calls=1, prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens)


class LLMUsage(BaseModel):
    """Token usage of one stage. Cached answers cost nothing and are counted apart."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: LLMUsage) -> LLMUsage:
        return LLMUsage(
            calls=self.calls + other.calls,
            cached_calls=self.cached_calls + other.cached_calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class Provider(Protocol):
    """What a provider does: one chat turn, a system prompt and a user message."""

    model: str
    endpoint: str  # part of the cache key: one model name on two servers is two models
    secrets: tuple[str, ...]  # the credentials as a request carries them: masked in every error

    def complete(self, system: str, user: str, *, max_tokens: int) -> Completion: ...


class OpenAIProvider:
    """Any endpoint that speaks OpenAI's Chat Completions API."""

    def __init__(self, *, model: str, base_url: str | None, api_key: str | None, timeout: float) -> None:
        import openai

        self.model = model
        # Local servers (llama.cpp, Ollama) ignore the key, but the SDK insists on one.
        key = api_key or os.environ.get("OPENAI_API_KEY") or (None if base_url is None else "not-needed")
        self._client = openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=0)
        self.endpoint = str(self._client.base_url)  # what the SDK resolved, OPENAI_BASE_URL included
        self.secrets = secret_forms(self.endpoint, api_key or os.environ.get("OPENAI_API_KEY"))

    def complete(self, system: str, user: str, *, max_tokens: int) -> Completion:
        response = self._client.chat.completions.create(
            model=self.model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            max_tokens=max_tokens,
            temperature=0.0,
        )
        choice = response.choices[0] if response.choices else None
        usage = response.usage
        return Completion(
            text=(choice.message.content or "") if choice else "",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            truncated=choice is not None and choice.finish_reason == "length",
        )


class AnthropicProvider:
    """Anthropic's Messages API."""

    def __init__(self, *, model: str, base_url: str | None, api_key: str | None, timeout: float) -> None:
        import anthropic

        self.model = model
        self._client = anthropic.Anthropic(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)
        self.endpoint = str(self._client.base_url)
        self.secrets = secret_forms(self.endpoint, api_key or os.environ.get("ANTHROPIC_API_KEY"))

    def complete(self, system: str, user: str, *, max_tokens: int) -> Completion:
        response = self._client.messages.create(
            model=self.model,
            system=system,
            messages=[{"role": "user", "content": user}],
            max_tokens=max_tokens,
        )  # no temperature: this SDK's Messages API no longer takes one
        text = "".join(getattr(block, "text", "") for block in response.content)
        return Completion(
            text=text,
            prompt_tokens=response.usage.input_tokens,
            completion_tokens=response.usage.output_tokens,
            truncated=response.stop_reason == "max_tokens",
        )


def _status(exc: BaseException) -> int | None:
    import anthropic
    import openai

    if isinstance(exc, openai.APIStatusError | anthropic.APIStatusError):
        return exc.status_code
    return None


def is_transient(exc: BaseException) -> bool:
    """Errors worth another try: the network, timeouts, rate limits and the server's own faults.
    A bad request or a wrong key fails at once."""
    import anthropic
    import openai

    status = _status(exc)
    if status is not None:
        return status in (408, 409, 429) or status >= 500
    return isinstance(exc, openai.APIConnectionError | anthropic.APIConnectionError)


@dataclass(frozen=True)
class LLM:
    """A provider with a response cache and retries. Thread-safe."""

    provider: Provider
    cache: ResponseCache | None = None
    max_retries: int = 4
    max_wait_seconds: float = 30.0

    @property
    def name(self) -> str:
        return f"{type(self.provider).__name__}:{self.provider.model}"

    def complete(self, system: str, user: str, *, max_tokens: int) -> Completion:
        """One chat turn, from the cache when this model already answered this exact prompt."""
        key_parts = (self.name, self.provider.endpoint, str(max_tokens), system, user)
        if self.cache is not None and (hit := self.cache.get(key_parts)) is not None:
            return Completion.model_validate({**hit, "cached": True})
        retrying = Retrying(
            retry=retry_if_exception(is_transient),
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait_exponential_jitter(multiplier=0.5, max=self.max_wait_seconds),
            before_sleep=lambda state: log.warning(
                "LLM call failed (%s); retry %d of %d",
                self._shown(str(state.outcome.exception())) if state.outcome else "?",
                state.attempt_number,
                self.max_retries,
            ),
            reraise=True,
        )
        try:
            completion = retrying(self.provider.complete, system, user, max_tokens=max_tokens)
        except Exception as exc:
            message = self._shown(f"{self.name} at {self.provider.endpoint} failed: {type(exc).__name__}: {exc}")
            if _status(exc) in _REFUSED:
                raise LLMRefusedError(message) from exc
            raise LLMError(message) from exc
        if self.cache is not None:
            self.cache.put(key_parts, completion.model_dump(exclude={"cached"}))
        return completion

    def _shown(self, text: str) -> str:
        """Text about a call, fit to show: URLs redacted, the provider's credentials masked."""
        return mask_secrets(redact_urls_in(text), self.provider.secrets)


def require_llm(llm: LLM | None, purpose: str) -> LLM:
    """The LLM, or the one error every LLM feature gives when none is configured."""
    if llm is None:
        raise ParameterError(f"{purpose} needs an LLM: set CUERAG_LLM_PROVIDER and CUERAG_LLM_MODEL")
    return llm


# Statuses that refuse one request (too long, filtered, malformed) rather than every request.
_REFUSED = frozenset({400, 413, 422})


def make_llm(settings: Settings, *, cache_dir: Path | None = None) -> LLM | None:
    """The LLM the settings name, or None when none is configured."""
    if settings.llm_provider == "none":
        return None
    if not settings.llm_model:
        raise ParameterError(f"CUERAG_LLM_PROVIDER={settings.llm_provider} needs a model: set CUERAG_LLM_MODEL")
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    cls: type[OpenAIProvider] | type[AnthropicProvider] = (
        OpenAIProvider if settings.llm_provider == "openai" else AnthropicProvider
    )
    try:
        provider = cls(
            model=settings.llm_model, base_url=settings.llm_base_url, api_key=key, timeout=settings.llm_timeout
        )
    except Exception as exc:  # the SDKs refuse a missing key here, with their own exception types
        raise ParameterError(redact_urls_in(f"cannot set up the {settings.llm_provider} LLM: {exc}")) from exc
    cache = ResponseCache(cache_dir / "llm_cache.sqlite3") if settings.llm_cache and cache_dir is not None else None
    return LLM(provider=provider, cache=cache, max_retries=settings.llm_max_retries)
