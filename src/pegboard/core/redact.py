"""Hiding secrets and neutralising untrusted text before people or the model see it.

``mask`` replaces configured secret values (an ``env`` or ``headers`` value of a server) in any
text, ``redact_url`` hides URL credentials and secret-looking query parameters. (A server's
failure reason becomes a fixed phrase with :func:`pegboard.errors.public_reason`, which
:class:`~pegboard.errors.ServerUnavailable` applies itself.)
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
# Values shorter than this are not masked: "1" or "on" would shred every log line.
MIN_SECRET_LENGTH = 4
_SECRET_PARAM = re.compile(
    r"(key|token|secret|passw|pwd|sig|signature|auth|credential|session|cookie)", re.I
)


def mask(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each secret value replaced by ``***``."""
    values = sorted(
        {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True
    )
    for value in values:
        text = text.replace(value, MASK)
    return text


def is_secret_key(name: str) -> bool:
    """Whether a header, query parameter or env name looks like it holds a credential."""
    return bool(_SECRET_PARAM.search(name))


def redact_url(url: str) -> str:
    """``url`` with ``user:password@`` and secret-looking query parameters masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, MASK if is_secret_key(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def escape_markup(text: str) -> str:
    """``text`` safe inside a ``<tag>...</tag>`` prompt wrapper (no tag can be closed)."""
    return re.sub(r"[&<>]", lambda m: _ESCAPES[m.group(0)], text)


_URL = re.compile(r"""[a-z][a-z0-9+.-]*://[^\s'"<>]+""", re.I)


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with URL credentials and secret parameters, and ``secrets``, masked."""
    return mask(_URL.sub(lambda m: redact_url(m.group(0)), text), secrets)


class _LogRedaction:
    """A log-record factory masking secrets in every record, pegboard's and libraries'
    (the MCP SDK and httpx log request URLs, which may carry credentials)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.secrets: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = self.inner(*args, **kwargs)
        try:
            text = record.getMessage()
        except Exception:  # a broken format string is logging's problem, not ours
            return record
        cleaned = redact_text(text, self.secrets)
        if cleaned != text:
            record.msg, record.args = cleaned, None
        return record


_installed: _LogRedaction | None = None


def redact_logs(secrets: Iterable[str]) -> None:
    """Mask URL credentials and ``secrets`` in every log record from now on (idempotent;
    later calls add secrets)."""
    global _installed
    if _installed is None:
        _installed = _LogRedaction(logging.getLogRecordFactory())
        logging.setLogRecordFactory(_installed)
    with _installed.lock:
        _installed.secrets.update(s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH)
