"""The wire APIs clients speak (chat completions, the Responses API, ...): base.py's `WireApi`
protocol, one module per API, and registry.py listing them by name."""
