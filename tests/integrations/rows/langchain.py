"""LangChain v1 as the contract's rows: ``create_agent`` with ``RunContextMiddleware``, a
``ChatOpenAI`` (Chat Completions) model, the agent's own ``system_prompt``, a LangGraph
checkpointer keeping each conversation (a thread), sync (``invoke``) and async (``ainvoke``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx

from contract import INSTRUCTIONS, LOOKUP_RESULT, Agent, Outcome, Row, Setup, Wire, text_of
from fakeserver import Recorded


class LangChainAgent:
    def __init__(self, setup: Setup, asynchronous: bool) -> None:
        from langchain.agents import create_agent
        from langchain_core.tools import tool
        from langchain_openai import ChatOpenAI
        from langgraph.checkpoint.memory import InMemorySaver

        from runcontext.integrations.langchain import RunContextMiddleware

        @tool
        def lookup(ticket: str) -> str:
            """Look a ticket up."""
            return LOOKUP_RESULT

        self.asynchronous = asynchronous
        # One middleware for every run, as a long-lived service holds one.
        self.middleware = RunContextMiddleware(
            setup.context, session=setup.session, budget=setup.budget, counter=setup.counter
        )
        self.checkpointer = InMemorySaver()

        def agent() -> Any:
            model = ChatOpenAI(
                model="gpt-4.1",
                base_url=setup.server.url + "/v1",
                api_key="sk-fake",
                max_retries=0,
                http_async_client=httpx.AsyncClient(),
            )
            return create_agent(
                model,
                tools=[lookup],
                system_prompt=INSTRUCTIONS,
                middleware=[self.middleware],
                checkpointer=self.checkpointer,
            )

        # An async HTTP client belongs to the event loop it first ran in (and langchain-openai
        # shares one per base URL): the async row builds the agent, with a client of its own,
        # for each asyncio.run; the middleware and the memory are the same for every run.
        self.make_agent = agent
        self.agent = agent()

    def ask(self, question: str, conversation: str = "c1") -> Outcome:
        config: Any = {"configurable": {"thread_id": conversation}}
        inputs = {"messages": [{"role": "user", "content": question}]}
        if self.asynchronous:
            agent = self.make_agent()

            async def run() -> Any:
                return await agent.ainvoke(inputs, config)

            result = asyncio.run(run())
        else:
            agent = self.agent
            result = agent.invoke(inputs, config)
        history = [message.model_dump() for message in agent.get_state(config).values["messages"]]
        return Outcome(result, history)


def wire(request: Recorded) -> Wire:
    head, *conversation, tail = request.json["messages"]
    return Wire(
        head=text_of(head["content"]) if head["role"] == "system" else None,
        conversation=conversation,
        tail=text_of(tail["content"]),
        tail_last=True,
    )


def row(asynchronous: bool) -> Callable[[], Row]:
    def agent(setup: Setup) -> Agent:
        return LangChainAgent(setup, asynchronous)

    return lambda: Row(agent, wire, {"role": "system", "content": INSTRUCTIONS})


ROWS = {"langchain": row(asynchronous=False), "langchain-async": row(asynchronous=True)}
