"""The one error tree of tauproxy.

    TauproxyError                  every error tauproxy raises on purpose
    ├── ConfigError                bad flags, bad config files, unknown names
    ├── DomainError                a domain pack that does not load or validate
    ├── CassetteError              a cassette file that cannot be read or written
    │   └── ReplayMissError        strict replay met a request that was never recorded
    ├── ModelCallError             a model call failed (provider error, bad response)
    └── ToolExecutionError         a tool refused its input; becomes an error tool message

The CLI prints the message of a TauproxyError on one line and exits non-zero; anything else is a
bug and keeps its traceback.
"""


class TauproxyError(Exception):
    """Root of every error tauproxy raises on purpose."""


class ConfigError(TauproxyError):
    """A flag, config file or name given by the user is invalid."""


class DomainError(TauproxyError):
    """A domain pack is missing, malformed or inconsistent."""


class CassetteError(TauproxyError):
    """A cassette cannot be read or written."""


class ReplayMissError(CassetteError):
    """Strict replay was asked for a request that the cassette does not hold."""


class ModelCallError(TauproxyError):
    """A model call failed.

    `status_code` is the provider's HTTP status when it gave one; `code` names failures that have
    none ("upstream_timeout", "upstream_unreachable", "upstream_malformed"); `retry_after` is the
    provider's Retry-After header, passed on by `serve`.
    """

    def __init__(
        self, message: str, status_code: int | None = None, code: str | None = None, retry_after: str | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.code = code
        self.retry_after = retry_after


class ToolExecutionError(TauproxyError):
    """A tool rejected its call; the engine turns it into an error tool message."""
