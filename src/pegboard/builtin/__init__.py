"""Built-in tools (``web_search``, ``web_fetch``, ``kb_search``, ``kb_list``) and the
``pegboard.tools`` plugin hook through which they, and any package's tools, are registered.

:func:`load_tool_entries` returns the entries of every installed plugin, pegboard's own
included; each entry's ``applies`` gates it on the profile.
"""

from pegboard.builtin.plugins import load_tool_entries

__all__ = ["load_tool_entries"]
