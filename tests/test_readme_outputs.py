"""What the README quotes of its four jobs' output is what those commands print.

The README's "The four jobs" runs offline on scripted models; its prose quotes lines the commands
print (the replay's call counts, the miss's difference, `check`'s verdict, `diff`'s cause). Those
quotes went stale once already, when `check`'s interval changed and the README kept the old one. This
test runs the section's commands as written (in a scratch directory, in-process) and requires every
quoted output to be in what they printed.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

from conftest import invoke_cli

REPO = Path(__file__).resolve().parent.parent
SECTION = ("## The four jobs", "## What else there is")
# An inline code span that is a command, a flag, a path or a model name, not something printed.
NOT_OUTPUT = re.compile(r"^(-|\.|run |tauproxy|git |source |[\w.-]+/|\S+$)")


def section() -> str:
    text = (REPO / "README.md").read_text()
    return text[text.index(SECTION[0]) : text.index(SECTION[1])]


def commands(text: str) -> list[list[str]]:
    """The argument lists of every `tauproxy` line in the section's bash blocks, continuations joined."""
    found: list[list[str]] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line)
            if words and words[0].endswith("tauproxy"):
                found.append(words[1:])
    return found


def quoted_outputs(text: str) -> list[str]:
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    return [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose) if not NOT_OUTPUT.match(span)]


def test_the_readme_quotes_what_its_jobs_print(tmp_path: Path) -> None:
    text = section()
    jobs = commands(text)
    assert [job[0] for job in jobs] == ["run", "run", "estimate", "run", "check", "diff"]
    quotes = quoted_outputs(text)
    assert len(quotes) >= 4 and any(quote.startswith("bad: ") for quote in quotes), quotes
    shutil.copytree(REPO / "cassettes", tmp_path / "cassettes", ignore=shutil.ignore_patterns(".tauproxy-index"))
    printed = []
    for job in jobs:
        outcome = invoke_cli(*job, cwd=tmp_path, check=False, env={"COLUMNS": "200"})
        assert outcome.returncode in (0, 1), f"{job}: {outcome.returncode}\n{outcome.stdout}\n{outcome.stderr}"
        printed.append(outcome.stdout + outcome.stderr)
    # The miss the prose describes: the replay of job 2 with `--seed 301`.
    miss = invoke_cli(
        *[word for word in jobs[1] if word not in ("--save-to", "runs/ci")], "--seed", "301", cwd=tmp_path, check=False
    )
    assert miss.returncode == 2
    printed.append(miss.stdout + miss.stderr)
    everything = " ".join(" ".join(output.split()) for output in printed)
    for quote in quotes:
        pattern = r".*?".join(re.escape(part.strip()) for part in quote.split("..."))
        assert re.search(pattern, everything), f"the README quotes {quote!r}, which no job printed"
