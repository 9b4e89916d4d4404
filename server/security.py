"""Host and Origin checks for the HTTP transport (DNS-rebinding protection).

A page in the user's browser can reach a server on a loopback address through a name it controls
(DNS rebinding: `evil.example` resolves to 127.0.0.2 after the page loads). Loopback needs no
token here, so the only defence is to refuse requests whose `Host` is not a loopback name, and
whose `Origin` is a foreign site. The SDK turns the check on by itself only for `127.0.0.1`,
`localhost` and `::1`; this builds it for every bind, from the one place that knows the bind.
"""

from __future__ import annotations

import ipaddress
import logging

from mcp.server.transport_security import TransportSecuritySettings

from server.config import ServerSettings, is_loopback

log = logging.getLogger(__name__)

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def _host_pattern(host: str) -> str:
    """The `Host` header value for a bind address, any port (IPv6 addresses in brackets)."""
    try:
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    except ValueError:
        pass
    return f"{host}:*"


def transport_security(settings: ServerSettings) -> TransportSecuritySettings:
    """The SDK's Host/Origin settings for this server's bind address.

    Loopback (any 127.x.y.z, ::1, localhost): the check is on; allowed are the loopback names and
    the bound address as Host, with any port, the same as http(s) origins, and
    `allowed_origins`. Any other bind needs a bearer token (the settings refuse one without), which
    a rebinding page cannot send; the check is on there too when `allowed_origins` names the
    browser origins to admit (the bound address is then the allowed Host), and off otherwise,
    since the names clients use to reach a public address cannot be known here."""
    if is_loopback(settings.host):
        names = dict.fromkeys([*_LOOPBACK_NAMES, _host_pattern(settings.host)[:-2]])
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[f"{n}:*" for n in names] + list(names),
            allowed_origins=[f"{scheme}://{n}:*" for n in names for scheme in ("http", "https")]
            + [f"{scheme}://{n}" for n in names for scheme in ("http", "https")]
            + list(settings.allowed_origins),
        )
    if settings.allowed_origins:
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[_host_pattern(settings.host), _host_pattern(settings.host)[:-2]],
            allowed_origins=list(settings.allowed_origins),
        )
    log.info(
        "HTTP on %s: Host/Origin not checked (set --allowed-origin to check them); the token guards it", settings.host
    )
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)
