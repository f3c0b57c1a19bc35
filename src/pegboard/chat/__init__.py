"""The agent loop behind ``pegboard chat``: model turns, tool calls, repair, approval."""
