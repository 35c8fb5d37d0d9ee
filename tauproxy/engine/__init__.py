"""The simulation engine: environment, agent, user simulator, judge, orchestrator and evaluator."""
