"""Built-in tools (``web_search``, ``web_fetch``) and the ``pegboard.tools`` plugin hook.

:func:`load_tool_entries` returns the entries of every installed plugin, pegboard's own
included; each entry's ``applies`` gates it on the profile.
"""

from pegboard.builtin.plugins import load_tool_entries

__all__ = ["load_tool_entries"]
