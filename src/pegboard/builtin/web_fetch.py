"""``web_fetch``: one page as readable text, through the guarded client."""

from __future__ import annotations

from pegboard.builtin.address_policy import AddressPolicy
from pegboard.config.model import WebFetchConfig

DEFAULT_MAX_CHARS = 20_000
MAX_CHARS_LIMIT = 200_000


async def web_fetch(
    url: str, max_chars: int = DEFAULT_MAX_CHARS, *, config: WebFetchConfig | None = None
) -> str:
    """Fetch ``url`` and return ``URL: <final url>`` then its readable text.

    Text longer than ``max_chars`` is cut and the cut is marked, with the full length, so the
    model knows there is more. Refusals and failures raise model-readable errors.
    """
    # Lazy: the HTTP client and the HTML reader load on the first fetch, not when the tool
    # is registered (every CLI read command registers it).
    from pegboard.builtin.guarded_http import fetch
    from pegboard.builtin.readable import readable_text

    settings = config or WebFetchConfig()
    policy = AddressPolicy.from_cidrs(settings.allow_networks)
    page = await fetch(url, policy, max_bytes=settings.max_bytes, deadline=settings.timeout)
    text = (await readable_text(page.body, page.content_type, page.charset, page.url)).strip()
    limit = max(1, min(max_chars, MAX_CHARS_LIMIT))
    if len(text) > limit:
        text = (
            f"{text[:limit]}\n\n[truncated: showing {limit} of {len(text)} characters; "
            "call web_fetch with a larger max_chars for more]"
        )
    return f"URL: {page.url}\n\n{text}"
