"""`tauproxy serve`: an OpenAI-compatible record/replay server that any harness can point at.

It gives other harnesses (tau2-bench, scripts, SDK users) the same cassette as the in-process layer:
the same request key, the same sample key, the same files. See `app` for the HTTP surface,
`completions` for the record/replay decision and `identity` for how samples are told apart.
"""
