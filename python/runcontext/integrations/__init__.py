"""Integrations with agent frameworks: one module per framework, each an optional extra.

This package imports no framework; import the module for yours:

- :mod:`runcontext.integrations.langchain` (``pip install 'runcontext[langchain]'``):
  ``RunContextMiddleware`` for ``langchain.agents.create_agent``.
- :mod:`runcontext.integrations.pydantic_ai` (``pip install 'runcontext[pydantic-ai]'``):
  ``RunContextCapability`` for ``pydantic_ai.Agent(capabilities=[...])``.
- :mod:`runcontext.integrations.openai_agents` (``pip install 'runcontext[openai-agents]'``):
  ``RunContextFilter`` (a ``RunConfig.call_model_input_filter``) and ``RunContextSession``.

The contract they share (head where the framework keeps stable instructions, the tail after
the conversation and never in its history, one context per agent turn, Anthropic breakpoints
on the conversation and never on the tail) is in docs/INTEGRATIONS.md.
"""

__all__: list[str] = []
