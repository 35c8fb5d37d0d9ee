"""The exit codes of `tauproxy run` (and of every command for errors), for scripts and CI.

0    the run completed and scored trials
2    misconfiguration or bad input, reported before any trial (one line on stderr); also a
     strict-replay miss, which stops the run
3    the run ended, but no trial could be scored (every trial was an infrastructure error)
4    the run was stopped by the infrastructure: the cassette or the results could not be
     written, or --max-infra-errors trials in a row failed the same way
5    the budget (--max-cost) stopped the run, with --fail-on-budget (without it, 0)
130  interrupted (Ctrl-C); what finished is saved and the same command resumes
"""

from __future__ import annotations

OK = 0
MISCONFIGURED = 2
NOTHING_SCORED = 3
INFRASTRUCTURE_STOP = 4
BUDGET_STOP = 5
INTERRUPTED = 130
