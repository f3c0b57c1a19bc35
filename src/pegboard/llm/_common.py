"""What both model clients share: lazy SDK import, error translation, key redaction."""

from __future__ import annotations

import importlib
import json
from types import ModuleType
from typing import Any, ClassVar

import httpx2

from pegboard.core.redact import redact_url
from pegboard.core.scope import ModelInfo
from pegboard.errors import ModelError, ModelUnavailable, OptionalDependencyMissing

PLACEHOLDER_KEY = "unused"  # local servers need no key, but both SDKs insist on one


def require(module: str) -> ModuleType:
    """Import a provider SDK, or say which extra brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise OptionalDependencyMissing(f"The {module} model client", "llm") from exc


def redact(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` (an API key) masked, should an endpoint echo it back."""
    if secret and secret != PLACEHOLDER_KEY and len(secret) >= 4:
        return text.replace(secret, "***")
    return text


def translate(sdk: ModuleType, exc: Exception, endpoint: str, secret: str | None) -> ModelError:
    """One clear :class:`ModelError` for an SDK exception (never with the key in it, nor the
    ``user:password@`` of ``endpoint``)."""
    endpoint = redact_url(endpoint)
    if isinstance(exc, sdk.APITimeoutError):
        return ModelUnavailable(
            f"Model endpoint {endpoint} did not answer in time; raise the model's timeout or "
            "check the server.",
            endpoint=endpoint,
        )
    if isinstance(exc, sdk.APIConnectionError):
        cause = _root_cause(exc)
        return ModelUnavailable(
            f"Model endpoint {endpoint} is unreachable ({redact(cause, secret)}); check "
            "base_url and that the server is running.",
            endpoint=endpoint,
        )
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        detail = _shorten(redact(_status_detail(exc), secret), 300)
        hint = {
            401: " Check the API key (api_key_env).",
            403: " Check the API key's permissions.",
            404: " Check base_url and the model name.",
        }.get(status, "")
        return ModelError(
            f"Model endpoint {endpoint} answered HTTP {status}: {detail}.{hint}",
            endpoint=endpoint,
        )
    return ModelError(
        f"Model endpoint {endpoint} failed: {redact(f'{type(exc).__name__}: {exc}', secret)}",
        endpoint=endpoint,
    )


def _root_cause(exc: BaseException) -> str:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _status_detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        return json.dumps(body, ensure_ascii=False)
    return str(getattr(exc, "message", exc))


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class SdkClient:
    """What both clients share: the lazily imported SDK, its async client (which alone holds
    the key), timeouts and retries, and turning SDK errors into :class:`ModelError`."""

    kind: ClassVar[str]  # "openai" / "anthropic": the SDK module, and ModelInfo.provider
    sdk_class: ClassVar[str]
    default_base_url: ClassVar[str]

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        context_window: int | None = None,
        max_tokens: int | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
    ) -> None:
        self._sdk_module = require(self.kind)
        self.model = model
        url = (base_url or self.default_base_url).rstrip("/")
        self.endpoint = redact_url(url)  # what messages name: never ``user:password@``
        self.context_window = context_window
        self.max_tokens = max_tokens
        # The SDKs retry 408/409/429/5xx and dropped connections with backoff, honouring
        # Retry-After, so there is no retry loop of ours.
        self._sdk = getattr(self._sdk_module, self.sdk_class)(
            api_key=api_key or PLACEHOLDER_KEY,
            base_url=url,
            timeout=timeout,
            max_retries=max_retries,
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} model={self.model!r} endpoint={self.endpoint!r}>"

    def model_info(self) -> ModelInfo:
        return ModelInfo(self.model, self.kind, self.context_window)

    async def aclose(self) -> None:
        await self._sdk.close()

    def _error(self, exc: Exception, *, streaming: bool = False) -> ModelError:
        """``streaming``: raised while reading a stream's body, so the endpoint was reached."""
        dropped = isinstance(exc, httpx2.TransportError | self._sdk_module.APIConnectionError)
        if streaming and dropped:
            return ModelUnavailable(
                f"Model endpoint {self.endpoint} dropped the answer mid-stream "
                f"({redact(_root_cause(exc), self._sdk.api_key)}); retry the request.",
                endpoint=self.endpoint,
            )
        return translate(self._sdk_module, exc, self.endpoint, self._sdk.api_key)

    def _cut_short(self) -> ModelError:
        return ModelUnavailable(
            f"Model endpoint {self.endpoint} ended the stream before the answer was complete; "
            "retry the request.",
            endpoint=self.endpoint,
        )
