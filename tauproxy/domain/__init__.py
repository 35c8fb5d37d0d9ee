"""Domain packs: typed tool functions, copy-on-write state, and the pack loader."""
