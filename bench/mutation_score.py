"""The mutation score of the modules whose bounds the tests pin: mutmut 3 over a copy of the checkout.

Each module is mutated (a `<` made `<=`, a constant changed, a call's argument dropped, ...) one mutant at a
time, and the tests that exercise the mutated function run against it: a mutant the tests fail on is killed,
one they pass is a bound or a rule no test pins. The checkout (tracked and untracked-not-ignored files, as
they are on disk) is copied to a temporary directory with the ``[tool.mutmut]`` settings below added to its
pyproject.toml, so the worktree gets no ``mutants/`` folder and the project's pyproject no settings.

    .venv/bin/pip install -e '.[bench]'         # mutmut 3.8+
    .venv/bin/python bench/mutation_score.py [--jobs 2] [--at REV] [--keep DIR] [--survivors] [module ...]

The score is a lower bound: each module is tested by the test files listed for it in ``MODULES`` (the
suites that drive it), not by the whole suite. ``--survivors`` prints each surviving mutant's diff;
``--keep DIR`` leaves the copy there, where ``mutmut show NAME`` and ``mutmut browse`` work; ``--at main``
measures a commit instead of the files on disk (the score before a change). docs/testing.md has the
figures; all the modules take ~50 min on two busy cores (840 mutants).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# module -> the test files that pin it (its unit tests first; the end-to-end suites that also drive it, a
# real gateway's shutdown or Discord and Slack's buttons, are left out: they multiply the run's time)
MODULES: dict[str, list[str]] = {
    "picoora/gateway/runtime/turns.py": ["tests/test_turn_service.py"],
    "picoora/store/leases.py": ["tests/test_duties.py", "tests/oracle/test_fleet.py"],
    "picoora/store/oracle/leases.py": ["tests/oracle/test_fleet.py"],
    "picoora/gateway/runtime/duties.py": ["tests/test_duties.py", "tests/oracle/test_fleet.py"],
    "picoora/gateway/runtime/approvals.py": ["tests/test_approvals_rules.py", "tests/test_approvals.py"],
    "picoora/store/supersession.py": ["tests/test_supersession.py"],
    "picoora/store/doc_ranking.py": ["tests/test_docs_store.py"],
    "picoora/gateway/openai/replays.py": ["tests/test_openai_replays.py", "tests/test_gateway_openai.py",
                                          "tests/test_gateway_people_tokens.py"],
}
SURVIVED = 0  # mutmut's exit code (mutmut.stats.status_by_exit_code) when every test passed


def _copy_checkout(target: Path, revision: str | None) -> None:
    if revision is not None:  # the committed tree, e.g. to measure the tests before a change
        archive = subprocess.run(["git", "archive", "--format=tar", revision], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
        return
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():  # a deleted but still tracked file is skipped
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def _settings(copy: Path, modules: list[str]) -> str:
    # a test file the measured revision does not have yet is left out
    tests = sorted({test for module in modules for test in MODULES[module] if (copy / test).exists()})
    # what tests read beside the package (deploy/, docs/, README.md, ...): mutmut runs them in copy/mutants
    beside = sorted(p.name for p in copy.iterdir() if p.name not in ("picoora", "tests", "pyproject.toml"))
    return "\n".join([
        "", "[tool.mutmut]",
        'source_paths = ["picoora"]',
        f"also_copy = {json.dumps(beside)}",
        f"only_mutate = {json.dumps(modules)}",
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}",
        # pytest inside mutmut's own process (its trampolines switch the mutants), not in xdist workers
        'pytest_add_cli_args = ["-n0", "-q", "-p", "no:cacheprovider"]',
        # each mutant's tests in a process forked from one that has run none: the Oracle fake's and the
        # gateway's threads do not survive a fork from the process that ran them
        'process_isolation = "forkserver"',
        "use_git_change_detection = false",
        "",
    ])


def _scores(copy: Path, modules: list[str]) -> dict[str, tuple[Counter[str], list[str]]]:
    """Per module: the count of each outcome, and the surviving mutants' names."""
    from mutmut.stats import status_by_exit_code

    scores = {}
    for module in modules:
        meta = json.loads((copy / "mutants" / f"{module}.meta").read_text())["exit_code_by_key"]
        outcomes = Counter(status_by_exit_code[code] for code in meta.values())
        scores[module] = (outcomes, sorted(name for name, code in meta.items() if code == SURVIVED))
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help=f"of {', '.join(MODULES)} (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="mutants tested at once")
    parser.add_argument("--at", metavar="REV", help="measure this commit (default: the files as they are on disk)")
    parser.add_argument("--keep", type=Path, help="copy the checkout here and leave it (default: a temporary dir)")
    parser.add_argument("--survivors", action="store_true", help="print each surviving mutant's diff")
    args = parser.parse_args()
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"not a measured module: {', '.join(unknown)}")
    modules = args.modules or list(MODULES)
    if shutil.which("mutmut", path=str(Path(sys.executable).parent)) is None:
        sys.exit("mutmut is not installed beside this python: pip install -e '.[bench]'")
    mutmut = str(Path(sys.executable).parent / "mutmut")

    copy = args.keep or Path(tempfile.mkdtemp(prefix="picoora-mutation-"))
    if args.keep and args.keep.exists() and any(args.keep.iterdir()):
        parser.error(f"{args.keep} is not empty")
    copy.mkdir(parents=True, exist_ok=True)
    try:
        _copy_checkout(copy, args.at)
        with (copy / "pyproject.toml").open("a") as pyproject:
            pyproject.write(_settings(copy, modules))
        with (copy / "mutmut.log").open("w") as log:
            run = subprocess.run([mutmut, "run", "--max-children", str(args.jobs)], cwd=copy, stdout=log,
                                 stderr=subprocess.STDOUT)
        if run.returncode != 0:
            sys.exit(f"mutmut run failed ({run.returncode}):\n{(copy / 'mutmut.log').read_text()[-3000:]}")
        print(f"{'module':40} {'killed':>7} {'total':>6} {'score':>6}  outcomes")
        for module, (outcomes, survivors) in _scores(copy, modules).items():
            # mutmut's own score: a mutant that made the tests time out was detected too; a skipped one is none
            detected = outcomes["killed"] + outcomes["timeout"]
            tested = sum(outcomes.values()) - outcomes["skipped"]
            shown = ", ".join(f"{n} {status}" for status, n in sorted(outcomes.items()))
            print(f"{module:40} {detected:7} {tested:6} {100 * detected / max(tested, 1):5.0f}%  {shown}")
            for name in survivors if args.survivors else ():
                diff = subprocess.run([mutmut, "show", name], cwd=copy, capture_output=True, text=True).stdout
                print(f"    {diff.strip()}\n")
    finally:
        if args.keep is None:
            shutil.rmtree(copy, ignore_errors=True)


if __name__ == "__main__":
    main()
