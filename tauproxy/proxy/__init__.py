"""The proxy layer: transports (live, scripted, local, cassette), pricing and the per-trial client."""
