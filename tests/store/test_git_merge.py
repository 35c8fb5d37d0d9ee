"""Two branches record into one committed cassette; git's union merge combines them cleanly."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from recordings import recording

from tauproxy.store.cassette import Cassette
from tauproxy.store.maintenance import compact, verify

REPO_ROOT = Path(__file__).resolve().parents[2]
SYSTEM = {"role": "system", "content": "shared system prompt"}

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def record_calls(directory: Path, task_id: str, count: int, answer: str = "same answer") -> set[str]:
    cassette = Cassette.open(directory)
    keys = set()
    for index in range(count):
        request = {"model": "m", "messages": [SYSTEM, {"role": "user", "content": f"{task_id} q{index}"}]}
        response = {"choices": [{"message": {"role": "assistant", "content": answer}}]}
        entry = cassette.record(recording(request, response, task_id=task_id, call_index=index))
        keys.add(entry.sample_key)
    return keys


def new_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A git repo with the project's .gitattributes (merge=union for cassettes) and its cassette dir."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shutil.copy(REPO_ROOT / ".gitattributes", repo / ".gitattributes")
    (repo / ".gitignore").write_text("*.lock\n")
    return repo, repo / "cassettes" / "demo"


def test_union_merge_of_two_branches(tmp_path: Path) -> None:
    repo, cassette_dir = new_repo(tmp_path)
    base = record_calls(cassette_dir, "base", 1, answer="base answer")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base cassette")
    assert "merge: union" in git(repo, "check-attr", "merge", "cassettes/demo/calls.jsonl")

    git(repo, "checkout", "-q", "-b", "a")
    calls_x = record_calls(cassette_dir, "x", 3)
    git(repo, "commit", "-q", "-am", "record X")
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "-b", "b")
    calls_y = record_calls(cassette_dir, "y", 4)
    git(repo, "commit", "-q", "-am", "record Y")

    git(repo, "merge", "-q", "--no-edit", "a")

    text = (cassette_dir / "calls.jsonl").read_text()
    assert "<<<<<<<" not in text
    assert text.count('"same answer"') == 2  # both branches stored the same reply message
    merged = Cassette.open(cassette_dir, create=False)
    assert {entry.sample_key for entry in merged.entries()} == base | calls_x | calls_y
    assert verify(merged) == []
    # Both branches wrote the reply "same answer": the duplicate line is harmless and compact drops it.
    compact(cassette_dir)
    assert (cassette_dir / "calls.jsonl").read_text().count('"same answer"') == 1
    assert verify(merged) == [] and len(Cassette.open(cassette_dir, create=False)) == 8


def test_union_merge_of_two_compacted_branches(tmp_path: Path) -> None:
    """Each branch records and then compacts (rewriting the whole file in v3, short references);
    the union merge of the two rewritten files is still a valid cassette holding every call."""
    repo, cassette_dir = new_repo(tmp_path)
    base = record_calls(cassette_dir, "base", 2, answer="base answer")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base cassette")
    keys = {}
    for branch, task, count in (("a", "x", 3), ("b", "y", 4)):
        git(repo, "checkout", "-q", "main")
        git(repo, "checkout", "-q", "-b", branch)
        keys[branch] = record_calls(cassette_dir, task, count)
        compact(cassette_dir)
        git(repo, "commit", "-q", "-am", f"record {task}, compact")
    assert "sample_key" not in (cassette_dir / "calls.jsonl").read_text()  # v3 lines only

    git(repo, "merge", "-q", "--no-edit", "a")

    merged = Cassette.open(cassette_dir, create=False)
    assert "<<<<<<<" not in (cassette_dir / "calls.jsonl").read_text()
    assert {entry.sample_key for entry in merged.entries()} == base | keys["a"] | keys["b"]
    assert merged.problems == [] and verify(merged) == []
    for entry in merged.entries():  # every call replays the answer its branch recorded
        assert merged.response_of(entry)["choices"][0]["message"]["content"] in {"base answer", "same answer"}
    compact(cassette_dir)
    again = Cassette.open(cassette_dir, create=False)
    assert verify(again) == [] and len(again) == 9
