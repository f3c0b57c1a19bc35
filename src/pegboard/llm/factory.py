"""Build a model client from a ``[models.<id>]`` table; the key comes from the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pegboard.config.model import ModelConfig
from pegboard.errors import ConfigError
from pegboard.llm.anthropic_client import AnthropicClient
from pegboard.llm.openai_client import OpenAIClient
from pegboard.llm.types import ModelClient

DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def create_client(
    config: ModelConfig, *, name: str = "model", environ: Mapping[str, str] | None = None
) -> ModelClient:
    """The client for ``config`` (``name`` is its id, used in messages).

    The key is read from ``config.api_key_env`` (an error naming the variable, never its
    value, when that is unset), else from the provider's usual variable if set; a local
    server needs none. Raises :class:`~pegboard.errors.OptionalDependencyMissing` without the
    ``llm`` extra.
    """
    env = os.environ if environ is None else environ
    if config.api_key_env is not None:
        key = env.get(config.api_key_env)
        if not key:
            raise ConfigError(
                f"models.{name}.api_key_env names {config.api_key_env}, which is not set; "
                f"export {config.api_key_env}=<key> or remove api_key_env for a local server"
            )
    else:
        key = env.get(DEFAULT_KEY_ENV[config.kind]) or None
    cls: type[AnthropicClient | OpenAIClient] = (
        AnthropicClient if config.kind == "anthropic" else OpenAIClient
    )
    return cls(
        config.model,
        base_url=config.base_url,
        api_key=key,
        context_window=config.context_window,
        max_tokens=config.max_tokens,
        timeout=config.timeout,
        max_retries=config.max_retries,
    )
