"""One driver per route: a real agent run of the scenario, approving the gated call when the
framework pauses for it. Each returns the final answer and the approvals it was asked for."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pegboard.agent.params import AgentSession, build_agent_params
from pegboard.calls.approval import ApprovalRequest, CallbackApprovalHandler, Decision
from pegboard.core.scope import ModelInfo
from tests.integrations.scenario import SCOPE, World
from tests.model_server import ScriptedModel

PROMPT = "Email ops the weather forecast for Oslo."


@dataclass
class Outcome:
    answer: str
    asked: list[str] = field(default_factory=list)  # tool names the application approved
    ran_before_approval: list[str] = field(default_factory=list)


async def run_pydantic_ai(world: World, server: ScriptedModel) -> Outcome:
    from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from pegboard.integrations.pydantic_ai import PegboardToolset

    model = OpenAIChatModel(
        server.model, provider=OpenAIProvider(base_url=server.url, api_key="test-key")
    )
    toolset = PegboardToolset(registry=world.registry(), scope=SCOPE, audit=world.audit)
    agent = Agent(model, toolsets=[toolset], output_type=[str, DeferredToolRequests])
    first = await agent.run(PROMPT)
    assert isinstance(first.output, DeferredToolRequests)
    outcome = Outcome("", ran_before_approval=[name for name, _ in world.ran])
    results = DeferredToolResults()
    for call in first.output.approvals:
        outcome.asked.append(call.tool_name)
        results.approvals[call.tool_call_id] = ToolApproved()
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert isinstance(second.output, str)
    outcome.answer = second.output
    return outcome


async def run_plain_loop(world: World, server: ScriptedModel) -> Outcome:
    """build_agent_params + the dispatcher, driven with the openai SDK (Chat Completions)."""
    import openai

    outcome = Outcome("")

    def approve(request: ApprovalRequest) -> Decision:
        outcome.asked.append(request.tool_name)
        outcome.ran_before_approval = [name for name, _ in world.ran]
        return "allow_once"

    session = AgentSession(approval_handler=CallbackApprovalHandler(approve), audit=world.audit)
    registry = world.registry()
    client = openai.AsyncOpenAI(base_url=server.url, api_key="test-key")
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    for _ in range(8):
        params = build_agent_params(registry, SCOPE, ModelInfo(server.model), session=session)
        system = {"role": "system", "content": params.system_prompt}
        response = await client.chat.completions.create(
            model=server.model, messages=[system, *messages], tools=params.tools
        )
        message = response.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        results = await params.dispatcher.respond(message)
        if not results:
            outcome.answer = message.content or ""
            return outcome
        messages += results
    raise AssertionError("the loop did not finish")


async def run_openai_agents(world: World, server: ScriptedModel) -> Outcome:
    """The Agents SDK's Runner on the Responses API (its default), tracing off (no export)."""
    import openai
    from agents import Agent, OpenAIResponsesModel, RunConfig, Runner

    from pegboard.integrations.openai_agents import pegboard_tools

    client = openai.AsyncOpenAI(base_url=server.url, api_key="test-key")
    tools = pegboard_tools(registry=world.registry(), scope=SCOPE, audit=world.audit)
    agent: Agent[Any] = Agent(
        name="assistant",
        instructions=tools.instructions,
        tools=list(tools),
        model=OpenAIResponsesModel(model=server.model, openai_client=client),
    )
    config = RunConfig(tracing_disabled=True)
    outcome = Outcome("")
    result = await Runner.run(agent, PROMPT, run_config=config)
    while result.interruptions:
        outcome.ran_before_approval = [name for name, _ in world.ran]
        state = result.to_state()
        for item in result.interruptions:
            outcome.asked.append(str(item.tool_name))
            state.approve(item)
        result = await Runner.run(agent, state, run_config=config)
    outcome.answer = str(result.final_output)
    return outcome


async def run_langchain(world: World, server: ScriptedModel) -> Outcome:
    """LangChain's tool-calling loop: ChatOpenAI with the tools bound, ``tool.ainvoke`` per
    call; approval through pegboard's handler (LangChain has none of its own)."""
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI

    from pegboard.integrations.langchain import pegboard_langchain_tools

    outcome = Outcome("")

    def approve(request: ApprovalRequest) -> Decision:
        outcome.asked.append(request.tool_name)
        outcome.ran_before_approval = [name for name, _ in world.ran]
        return "allow_once"

    tools = pegboard_langchain_tools(
        registry=world.registry(),
        scope=SCOPE,
        audit=world.audit,
        approval_handler=CallbackApprovalHandler(approve),
    )
    by_name = {tool.name: tool for tool in tools}
    chat = ChatOpenAI(model=server.model, base_url=server.url, api_key="test-key")  # type: ignore[arg-type]
    model = chat.bind_tools(list(tools))
    messages: list[Any] = [SystemMessage(tools.instructions), HumanMessage(PROMPT)]
    for _ in range(8):
        reply = await model.ainvoke(messages)
        messages.append(reply)
        if not reply.tool_calls:  # type: ignore[attr-defined]
            outcome.answer = str(reply.content)
            return outcome
        for call in reply.tool_calls:  # type: ignore[attr-defined]
            messages.append(await by_name[call["name"]].ainvoke(call))
    raise AssertionError("the loop did not finish")


async def run_langgraph(world: World, server: ScriptedModel) -> Outcome:
    """A LangGraph agent graph (model node, ToolNode, checkpointer); a gated call interrupts
    the graph, which is resumed approved."""
    from langchain_core.messages import SystemMessage
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
    from langgraph.types import Command

    from pegboard.integrations.langchain import pegboard_langchain_tools

    tools = pegboard_langchain_tools(
        registry=world.registry(), scope=SCOPE, audit=world.audit, interrupt=True
    )
    chat = ChatOpenAI(model=server.model, base_url=server.url, api_key="test-key")  # type: ignore[arg-type]
    model = chat.bind_tools(list(tools))

    async def agent(state: MessagesState) -> dict[str, Any]:
        reply = await model.ainvoke([SystemMessage(tools.instructions), *state["messages"]])
        return {"messages": [reply]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(list(tools)))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "scenario"}}
    outcome = Outcome("")
    state = await graph.ainvoke({"messages": [("user", PROMPT)]}, config)
    while state.get("__interrupt__"):
        outcome.ran_before_approval = [name for name, _ in world.ran]
        outcome.asked += [pending.value["tool"] for pending in state["__interrupt__"]]
        state = await graph.ainvoke(Command(resume=True), config)
    outcome.answer = str(state["messages"][-1].content)
    return outcome
