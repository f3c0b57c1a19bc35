"""Agent parameters for one request: provider-format tools, prompt section, dispatcher."""

from pegboard.agent.dispatch import Dispatcher
from pegboard.agent.formats import Api
from pegboard.agent.params import AgentParams, AgentSession, build_agent_params

__all__ = ["AgentParams", "AgentSession", "Api", "Dispatcher", "build_agent_params"]
