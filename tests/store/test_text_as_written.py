"""A content line read back without a JSON parse: only when spelled as written and hashing to the
index's full hash; any other spelling is parsed as before, with the same canonical text."""

from __future__ import annotations

import hashlib

from tauproxy.data_model.key import canonical_json, canonical_message
from tauproxy.store.format import encode_blob_text, encode_msg_text, parse_line, short_ref, text_as_written

MESSAGE = {"role": "assistant", "content": "héllo", "tool_calls": [{"id": "c", "function": {"name": "f"}}]}


def _text_and_full(value: str) -> tuple[str, str]:
    return value, hashlib.sha256(value.encode()).hexdigest()


def test_a_line_as_written_gives_the_text_parse_line_gives() -> None:
    text, full = _text_and_full(canonical_json(canonical_message(MESSAGE)))
    for digest in (short_ref(full), full):
        raw = encode_msg_text(digest, text)[:-1].encode()
        assert text_as_written(raw, False, full) == text == parse_line(raw).text  # type: ignore[union-attr]
    blob, blob_full = _text_and_full(canonical_json('a raw body {"x": 1}'))
    raw = encode_blob_text(short_ref(blob_full), blob)[:-1].encode()
    assert text_as_written(raw, True, blob_full) == blob == parse_line(raw).text  # type: ignore[union-attr]


def test_any_other_line_is_left_to_the_parser() -> None:
    text, full = _text_and_full(canonical_json(canonical_message(MESSAGE)))
    written = encode_msg_text(short_ref(full), text)[:-1]
    spaced = written.replace('"m":{', '"m": {')  # the same message, spelled otherwise (hand-edited)
    assert text_as_written(spaced.encode(), False, full) is None
    assert parse_line(spaced.encode()).text == text  # type: ignore[union-attr]  # the parser's canonical text
    other = written.replace("héllo", "hello")  # another text under the same hash: not this content
    assert text_as_written(other.encode(), False, full) is None
    wrong_name = written.replace(short_ref(full), "0" * 16)  # the right text under another line hash
    assert text_as_written(wrong_name.encode(), False, full) is None
    assert text_as_written(written.encode(), True, full) is None  # a message line is no blob line
