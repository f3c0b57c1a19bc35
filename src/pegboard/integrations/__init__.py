"""pegboard inside agent frameworks: each module adapts the one call path to one framework.

- :mod:`pegboard.integrations.pydantic_ai`: ``PegboardToolset``
  (``pip install 'pegboard[pydantic-ai]'``)
- :mod:`pegboard.integrations.openai_agents`: ``pegboard_tools()``
  (``pip install 'pegboard[agents]'``)
- :mod:`pegboard.integrations.langchain`: ``pegboard_langchain_tools()``
  (``pip install 'pegboard[langchain]'``)

Nothing here imports a framework until its module is imported; without the extra, that
import fails with :class:`~pegboard.errors.OptionalDependencyMissing` (an ``ImportError``)
naming the ``pip install`` that fixes it.
"""
