"""The proxy layer: request keys, transports (live, scripted, cassette) and the per-trial client."""
