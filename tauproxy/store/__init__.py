"""The cassette store: every model call recorded once, replayed offline for free.

A cassette is a directory holding one append-only file, `calls.jsonl` (and `.tauproxy-index/`, a
derived SQLite index of it that git ignores; see index.py). Each line is a message, a
blob (a tools list), a chain node (one link of a request's message list) or a call; messages, blobs
and nodes are content-addressed (their hash is their name). A call names its request's messages by
the last node of their chain, and consecutive calls of a conversation share the nodes of their common
prefix, so a conversation recorded call by call stores each message once, adds one node per new
message and one call line per call: the file grows linearly with the conversation (see format.py).

Cassettes are meant to be committed, and `.gitattributes` marks `cassettes/**/calls.jsonl` for git's
`merge=union` driver: when two branches both record calls, git keeps the lines of both sides instead
of reporting a conflict. That is safe because of the format, not by luck:

- the file is append-only, so two branches only ever add lines after their common base (or, after
  `compact`, rewrite it: its lines are still content-addressed, so the union is still sound);
- every line is self-contained and content-addressed: a message or node line is identified by the
  hash of what it holds (the first 16 hex digits; a v4 node line does not write it, every reader
  computes it; a clash of two contents is detected, and the calls using it are reported, never
  guessed: format.py), so the same message or chain written
  by both branches is the same line, and a duplicate is harmless (the reader tolerates duplicate
  identical message, blob and node lines); a node's hash covers its parent's, so branches that
  continue one conversation differently add different nodes after the shared ones, never two
  meanings for one hash;
- references are resolved once every line is indexed, so the order union produces does not matter
  (a call line carries no key: the reader derives it from the content the call refers to);
- when both branches recorded the same sample key, the last line wins, as for any re-recording;
- `tauproxy cassette verify` checks the result (every line parses, every hash matches its content,
  every reference resolves, every chain reaches its start without a cycle) and `tauproxy cassette
  compact` rewrites it without duplicates or unreachable lines.
"""
