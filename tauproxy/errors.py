"""The one error tree of tauproxy.

    TauproxyError                  every error tauproxy raises on purpose
    ├── ConfigError                bad flags, bad config files, unknown names
    ├── DomainError                a domain pack that does not load or validate
    ├── InfrastructureError        the infrastructure failed, not the agent: never a score
    │   ├── CassetteError          a cassette file that cannot be read or written
    │   │   ├── CassetteWriteError a live answer could not be recorded: the run stops
    │   │   └── ReplayMissError    strict replay met a request that was never recorded
    │   ├── ResultsWriteError      a finished trial could not be saved: the run stops
    │   └── ModelCallError         a model call failed (provider error, bad response, bad name)
    └── ToolExecutionError         a tool refused its input; becomes an error tool message

A trial that meets an InfrastructureError is saved as `infrastructure_error`: excluded from every
score, counted apart, and run again on resume. Some stop the whole run instead: a replay miss
(strict replay promised the run needs nothing live), and a cassette or results write failure (going
on would pay for answers or trials that cannot be kept).

The CLI prints the message of a TauproxyError on one line and exits non-zero; anything else is a
bug and keeps its traceback.
"""


class TauproxyError(Exception):
    """Root of every error tauproxy raises on purpose."""


class ConfigError(TauproxyError):
    """A flag, config file or name given by the user is invalid."""


class DomainError(TauproxyError):
    """A domain pack is missing, malformed or inconsistent."""


class InfrastructureError(TauproxyError):
    """Something under the agent failed (a provider, the network, the disk): the trial is not scored."""


class CassetteError(InfrastructureError):
    """A cassette cannot be read or written."""


class CassetteWriteError(CassetteError):
    """A live answer, paid for, could not be appended to the cassette. The run stops at once."""


class ReplayMissError(CassetteError):
    """Strict replay was asked for a request that the cassette does not hold."""


class ResultsWriteError(InfrastructureError):
    """A finished trial or the results file could not be written (disk full, read-only)."""


class ModelCallError(InfrastructureError):
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
