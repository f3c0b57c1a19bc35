"""Agent parameters for one request: provider-format tools, prompt section, dispatcher."""

from pegboard.agent.dispatch import Dispatcher
from pegboard.agent.params import AgentParams, AgentSession, build_agent_params
from pegboard.formats import Api

__all__ = ["AgentParams", "AgentSession", "Api", "Dispatcher", "build_agent_params"]
