"""Provider prompt-cache simulators: request-body evaluators that apply each provider's
documented cache rules, and a local server that answers the official SDKs with their usage.

See ``rules.py`` for what each simulator implements (docs/PLACEMENT.md, *Simulators*)."""
