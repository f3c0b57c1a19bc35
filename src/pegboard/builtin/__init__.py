"""Built-in tools (web_search, web_fetch, kb_search, kb_list), registered like a third-party
package's tools: through the ``pegboard.tools`` entry-point group."""
