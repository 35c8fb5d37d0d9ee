"""The one record mode: how the cassette layer uses a cassette, for `run`, `serve` and Ray alike."""

from __future__ import annotations

from enum import StrEnum

from tauproxy.errors import ConfigError


class RecordMode(StrEnum):
    """How the cassette is used.

    replay  strict and offline: a request that is not recorded is an error
    record  always call live and record every call; the cassette is never read
    auto    replay what is recorded, call live and record the rest (the default)
    off     no cassette at all
    once    record when the cassette is empty, replay strictly otherwise (see `resolved`)
    rewrite record as `record` does, and at the end keep only this session's calls: re-recording
            drops the calls a test no longer makes (`CassetteTransport.keep_only_this_session`,
            called by whoever delimits the session: a pytest test, an intercept, a server's lifetime)

    In every mode that goes live, a call that is the same sample as one this run already sent live
    gets that one answer ("shared", proxy/recorder.py), never a second live call.
    """

    REPLAY = "replay"
    RECORD = "record"
    AUTO = "auto"
    OFF = "off"
    ONCE = "once"
    REWRITE = "rewrite"

    def resolved(self, cassette_is_empty: bool) -> RecordMode:
        """The mode a run or server works in; `once` is decided here, once, when the cassette opens.

        Decided at start and never again: a server or run that flipped to replay midway because its
        own first recordings made the cassette non-empty would surprise its clients.
        """
        if self is RecordMode.ONCE:
            return RecordMode.RECORD if cassette_is_empty else RecordMode.REPLAY
        return self

    @property
    def goes_live(self) -> bool:
        """Whether a miss (or every call) may reach a provider."""
        return self not in (RecordMode.REPLAY, RecordMode.ONCE)

    @property
    def looks_up(self) -> bool:
        """Whether recorded samples are answered from the cassette."""
        return self in (RecordMode.REPLAY, RecordMode.AUTO)


# vcrpy's names, accepted so its users need not learn ours.
RECORD_MODE_ALIASES = {"none": RecordMode.REPLAY, "all": RecordMode.RECORD, "new_episodes": RecordMode.AUTO}


def parse_record_mode(value: str) -> RecordMode:
    value = value.strip().lower()
    if value in RECORD_MODE_ALIASES:
        return RECORD_MODE_ALIASES[value]
    try:
        return RecordMode(value)
    except ValueError:
        names = ", ".join([*(m.value for m in RecordMode), *RECORD_MODE_ALIASES])
        raise ConfigError(f"unknown record mode {value!r} (choose from: {names})") from None
