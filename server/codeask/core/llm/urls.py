"""Endpoint URLs: where a provider's paths go, and whether the endpoint is this machine."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from codeask.config import LLMSettings


def is_loopback(url: str) -> bool:
    """Whether the URL's host is this machine (localhost, 127/8, ::1); unparsable → False."""
    try:
        host = (urlsplit(url).hostname or "").rstrip(".").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_unspecified


def base_url(settings: LLMSettings) -> str:
    """The base URL without a trailing slash or an API suffix the user may have pasted.

    Either suffix is dropped whatever the provider: people paste `…/v1` for Ollama too.
    """
    base = settings.base_url.strip().rstrip("/")
    for suffix in ("/v1", "/api"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base
