"""The configuration as a person may see it: the file, or every setting, secrets masked."""

from __future__ import annotations

import copy
from typing import Any

from pegboard.config import LoadedConfig
from pegboard.core.redact import looks_secret, mask, redact_args, redact_url

REDACTED = "***"


def config_data(loaded: LoadedConfig, *, effective: bool, show_secrets: bool = False) -> Any:
    """The file as written, or with ``effective`` every setting with its default; masked
    (:func:`redact`) unless ``show_secrets``."""
    data = loaded.config.model_dump(mode="json", exclude_none=True) if effective else loaded.raw
    return data if show_secrets else redact(data)


def redact(data: dict[str, Any]) -> dict[str, Any]:
    """A copy with secrets masked: secret-looking env and header values, API keys, the token.

    Other env values (``DEBUG = "1"``, a path) are shown: a dry run must show what changes.
    """
    out = copy.deepcopy(data)
    for server in out.get("servers", {}).values():
        if not isinstance(server, dict):
            continue
        secrets = [
            str(v)
            for key in ("env", "headers")
            if isinstance(server.get(key), dict)
            for k, v in server[key].items()
            if looks_secret(k, v)
        ]
        for key in ("env", "headers"):
            if isinstance(server.get(key), dict):
                server[key] = {
                    k: REDACTED if looks_secret(k, v) else v for k, v in server[key].items()
                }
        if isinstance(server.get("url"), str):
            server["url"] = redact_url(server["url"])
        if isinstance(server.get("args"), list):  # `--token=<env value>`, `--api-key sk-...`
            server["args"] = redact_args([mask(str(a), secrets) for a in server["args"]])
    for model in out.get("models", {}).values():
        if not isinstance(model, dict):
            continue
        if isinstance(model.get("base_url"), str):  # the key itself is only ever in the env
            model["base_url"] = redact_url(model["base_url"])
    for provider in out.get("web_search", {}).values():
        if isinstance(provider.get("url"), str):
            provider["url"] = redact_url(provider["url"])
        if provider.get("api_key"):
            provider["api_key"] = REDACTED
    if out.get("gateway", {}).get("token"):
        out["gateway"]["token"] = REDACTED
    return out
