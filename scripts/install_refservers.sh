#!/usr/bin/env bash
# The reference MCP servers the real-server tests start (tests/gateway, tests/cli), installed
# into .refservers/: the PyPI ones in a venv of their own (they pin an older mcp than ours),
# the npm ones in a project-local prefix. Needs python3 and npm. `.ci/run` runs this; run it
# yourself to enable those tests locally (they skip, saying so, until then).
# If a registry cannot be reached, a marker says so and those tests skip with that reason.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p .refservers
rm -f .refservers/UNAVAILABLE-*
python3 -m venv .refservers/py
if ! .refservers/py/bin/pip install -q mcp-server-time mcp-server-git; then
    echo "pip could not install mcp-server-time/mcp-server-git (PyPI unreachable?)" \
        > .refservers/UNAVAILABLE-pypi
fi
if ! npm install --prefix .refservers/npm --no-audit --no-fund --loglevel=error \
    @modelcontextprotocol/server-everything @modelcontextprotocol/server-memory \
    @modelcontextprotocol/server-filesystem @modelcontextprotocol/inspector oidc-provider; then
    echo "npm could not install the reference servers (npm registry unreachable?)" \
        > .refservers/UNAVAILABLE-npm
fi
