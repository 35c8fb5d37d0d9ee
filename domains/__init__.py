"""tauproxy's built-in domain packs, installed as `tauproxy_domains` (see pyproject.toml)."""
