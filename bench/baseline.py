"""Run one benchmark on the code before a change and on the code now, in one run.

`uv run python -m bench.baseline --ref REF [--rounds 1] -- MODULE [ARGS…]`
e.g. `uv run python -m bench.baseline --ref b0e9e78 -- bench.turn --turns 300 --clients 1`

The code at REF is checked out in a git worktree of its own (detached, under the system's
temporary directory, kept between runs and reused: `--fresh` makes it again), with its own
environment from its lock file (`uv run --locked` there). Then, `--rounds` times, the
benchmark runs on REF and on this checkout, one after the other (alternating, so a
machine's drift over the run falls on both), each with the same arguments and each
building its own databases and servers from its own code (`--bench-here`: REF's app
measured by this checkout's bench/, copied over REF's in its worktree until `--fresh`,
for a benchmark newer than REF). The benchmark's output is
printed as it comes, under a line naming the code it measured.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from app.settings import PROJECT_ROOT


def _git(*args: str, cwd: Path = PROJECT_ROOT) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def baseline_worktree(ref: str, fresh: bool) -> Path:
    """A worktree of `ref` (its commit resolved here), made once and reused."""
    commit = _git("rev-parse", "--verify", f"{ref}^{{commit}}")
    path = Path(tempfile.gettempdir()) / f"toolcells-baseline-{commit[:12]}"
    if fresh and path.exists():
        _git("worktree", "remove", "--force", str(path))
    if not path.exists():
        _git("worktree", "prune")
        _git("worktree", "add", "--detach", str(path), commit)
    return path


def run_bench(label: str, cwd: Path, module: str, args: list[str]) -> None:
    print(f"== {label} ({cwd})", flush=True)
    command = ["uv", "run", "--locked", "python", "-m", module, *args]
    # each checkout's own environment, not the one this wrapper runs in
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    subprocess.run(command, cwd=cwd, env=env, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", required=True, help="the code before (a commit, branch or tag)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--fresh", action="store_true", help="check REF out again")
    parser.add_argument(
        "--bench-here",
        action="store_true",
        help="measure REF's app with this checkout's bench/ (copied over REF's)",
    )
    parser.add_argument("bench", nargs=argparse.REMAINDER, help="-- MODULE [ARGS…]")
    args = parser.parse_args()
    bench = args.bench[1:] if args.bench[:1] == ["--"] else args.bench
    if not bench:
        sys.exit("name the benchmark after --, e.g. -- bench.turn --turns 300")
    if not shutil.which("uv"):
        sys.exit("uv is required")
    module, bench_args = bench[0], bench[1:]
    before = baseline_worktree(args.ref, args.fresh)
    if args.bench_here:  # the same measurement on both: a newer benchmark, the old app
        shutil.copytree(PROJECT_ROOT / "bench", before / "bench", dirs_exist_ok=True)
    head = _git("rev-parse", "--short", "HEAD")
    for _ in range(args.rounds):
        run_bench(f"before: {args.ref}", before, module, bench_args)
        run_bench(f"after: {head} (this checkout)", PROJECT_ROOT, module, bench_args)


if __name__ == "__main__":
    main()
