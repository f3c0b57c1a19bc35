"""The CLI fixtures of tests/cli (config file, data directory, CliRunner) for attack tests."""

from tests.cli.conftest import config_path, invoke

__all__ = ["config_path", "invoke"]
