"""Secrets out of URLs before they are shown or logged: user-info (`user:pass@`) and query
parameters whose names look secret (api-key, token, secret, password, signature, …).

Endpoints are configured as URLs, and people put credentials in them (`http://user:pass@host/v1`,
`?api-key=…`, pre-signed `X-Amz-Signature=…`); the configuration resource, error messages and logs
show endpoints, so they show them through here.
"""

from __future__ import annotations

import base64
import re
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "***"

# Matched anywhere in a parameter's name, case-insensitively: `api-key`, `X-Api-Key`, `apikey`,
# `access_token`, `client_secret`, `passwd`, `X-Amz-Signature`, `X-Amz-Credential`, `sig`, `auth`.
_SECRET_NAME = re.compile(r"key|token|secret|passw|pwd|signature|credential|auth|session|cookie|^sig$", re.I)
_URL = re.compile(r"""\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'"<>`]+""")


def redact_url(url: str) -> str:
    """The URL with its user-info and secret-looking query values masked; other parts unchanged."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL urllib can read (an unbalanced '[', say): mask what looks like one
        return re.sub(r"//[^/@\s]*@", f"//{MASK}@", url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rpartition('@')[2]}"
    return urlunsplit(parts._replace(netloc=netloc, query=_redact_query(parts.query)))


def _redact_query(query: str) -> str:
    if not query:
        return query
    fields = []
    for field in query.split("&"):
        name, eq, _ = field.partition("=")
        fields.append(f"{name}={MASK}" if eq and _SECRET_NAME.search(name) else field)
    return "&".join(fields)


def redact_urls_in(text: str) -> str:
    """Every URL found in free text (an error message, a log line) redacted."""
    return _URL.sub(lambda m: redact_url(m.group()), text)


def redact_values(value: object) -> object:
    """A JSON-like value (dicts, lists, strings) with the URLs in its strings redacted."""
    if isinstance(value, str):
        return redact_urls_in(value)
    if isinstance(value, dict):
        return {k: redact_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_values(v) for v in value]
    return value


def secret_forms(url: str | None, api_key: str | None) -> tuple[str, ...]:
    """The texts a request to `url` carries its credentials as: the API key and, for a URL with
    user-info, the password, "user:password" and its base64 (an HTTP Basic header). An endpoint
    that echoes a request's headers in its error body would otherwise put them in the message."""
    forms = [api_key or ""]
    if url:
        try:
            parts = urlsplit(url)
            user, password = parts.username, parts.password
        except ValueError:
            user = password = None
        if password:
            pair = f"{unquote(user or '')}:{unquote(password)}"
            forms += [unquote(password), pair, base64.b64encode(pair.encode()).decode()]
    # Very short values would mask ordinary words; no real credential is that short.
    return tuple(sorted({f for f in forms if len(f) >= 4}, key=len, reverse=True))


def mask_secrets(text: str, secrets: tuple[str, ...]) -> str:
    """The text with every occurrence of each secret masked (longest first)."""
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text
