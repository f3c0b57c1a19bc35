"""Configuration: one TOML file (see :mod:`pegboard.config.load` for where it lives)."""

from typing import TYPE_CHECKING

from pegboard._lazy import lazy_exports

# public name -> submodule, loaded on first use (PEP 562): importing one submodule does not
# import its siblings.
_EXPORTS = {
    "CONFIG_ENV": "load",
    "DATA_DIR_ENV": "load",
    "DEFAULT_PROFILE": "model",
    "GatewayConfig": "model",
    "ImportPlan": "importer",
    "LoadedConfig": "load",
    "MetaConfig": "model",
    "ModelConfig": "model",
    "PegboardConfig": "model",
    "ProfileConfig": "model",
    "ServerConfig": "server",
    "TOKEN_ENV": "load",
    "WebFetchConfig": "model",
    "WebSearchProviderConfig": "model",
    "default_config_path": "load",
    "load_config": "load",
    "parse_mcp_servers": "server",
    "plan_import": "importer",
    "read_server_map": "importer",
    "render_reference": "reference",
    "resolve_config_path": "load",
    "validate_config": "load",
    "write_config": "load",
}

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from pegboard.config.importer import ImportPlan, plan_import, read_server_map
    from pegboard.config.load import (
        CONFIG_ENV,
        DATA_DIR_ENV,
        TOKEN_ENV,
        LoadedConfig,
        default_config_path,
        load_config,
        resolve_config_path,
        validate_config,
        write_config,
    )
    from pegboard.config.model import (
        DEFAULT_PROFILE,
        GatewayConfig,
        MetaConfig,
        ModelConfig,
        PegboardConfig,
        ProfileConfig,
        WebFetchConfig,
        WebSearchProviderConfig,
    )
    from pegboard.config.reference import render_reference
    from pegboard.config.server import ServerConfig, parse_mcp_servers

__all__ = [
    "CONFIG_ENV",
    "DATA_DIR_ENV",
    "DEFAULT_PROFILE",
    "TOKEN_ENV",
    "GatewayConfig",
    "ImportPlan",
    "LoadedConfig",
    "MetaConfig",
    "ModelConfig",
    "PegboardConfig",
    "ProfileConfig",
    "ServerConfig",
    "WebFetchConfig",
    "WebSearchProviderConfig",
    "default_config_path",
    "load_config",
    "parse_mcp_servers",
    "plan_import",
    "read_server_map",
    "render_reference",
    "resolve_config_path",
    "validate_config",
    "write_config",
]
