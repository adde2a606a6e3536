"""Every shell command of README.md and docs/ is run by a test, and the CLI reference follows ``--help``.

Commands come from fenced ``bash``/``sh``/``shell`` blocks (continuation lines joined, comments dropped). Each must
match one rule of ``RULES``: run here, offline, in a scratch directory holding a generated CloudTrail trail and the
files the docs name; run by another test (which must exist); or not runnable offline, with the reason. Every
``ddb-audit`` command must also parse with the real parser. Each command page's options table lists exactly the
options of that command's parser (shared output options once, on docs/commands/index.md). README.md stays a front
door: at most 300 lines, and its links reach existing pages and headings. No page tells history by commit hash or
issue number: figures stand for the code as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from auditor.cli import build_parser
from auditor.demo.trail import write_trail
from auditor.demo.workload import demo_workload

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
SHELL_FENCE = re.compile(r"^( *)```(?:bash|sh|shell)\n(.*?)^\1```", re.M | re.S)
#: The pipes, lists and redirections that end one program's arguments in a command line.
OPERATORS = {"|", "||", "&&", ";", ">", ">>", "<", "2>", "2>&1"}


@dataclass(frozen=True)
class Command:
    """One command of a shell block: where it is, its words (quotes kept, comment dropped), the comment after it."""

    page: str
    text: str
    expected: str | None = None


@dataclass(frozen=True)
class Rule:
    """Commands matching ``pattern`` are run here (``run``), run by ``test`` (path::name), or cannot run: ``why``."""

    pattern: str
    run: bool = False
    test: str = ""
    why: str = ""


RULES = (
    Rule(r"^aws ", why="an AWS CLI call against a real account"),
    Rule(r"^([A-Z_]+=\S+ ?)+$", why="sets shell variables for the AWS CLI calls that follow"),
    Rule(r"^(\.venv-tools/sam/bin/)?sam ", why="deploys or packages with SAM CLI against a real account"),
    Rule(
        r"^pip install ",
        why="installs into the reader's environment (test_packaging checks the demo extra it names; make wheel-check "
        "installs the built wheel with it)",
    ),
    Rule(r"^make demo$", test="tests/demo/test_demo.py::test_the_documented_transcript_is_the_real_output"),
    Rule(r"^make test$", why="the whole check suite, this test among it"),
    Rule(r"^make (tools|build|template-check)$", why="installs SAM CLI and checkov from the package index"),
    Rule(r"^make fast$", why="recompiles .venv's install; make test's unit-compiled target tests the compiled kernel"),
    Rule(r"^make bench(-lambda|-stages)?$", why="a measurement of minutes; tests/benchmarks run the same code small"),
    Rule(r"^make fuzz$", why="the long fuzz run; the suite runs tests/fuzz with fewer examples"),
    Rule(
        r"^ddb-audit demo --trail ",
        test="tests/demo/test_demo_replay.py::test_replay_and_analyze_trail_agree_on_a_multi_hour_trail",
    ),
    Rule(r"^ddb-audit demo$", test="tests/demo/test_demo.py::test_the_documented_transcript_is_the_real_output"),
    Rule(
        r"^ddb-audit audit (--region us-east-1 )?--format json > audit\.json$",
        test="tests/cli/test_cli_audit.py::test_audit_json_carries_capacity_that_what_if_reads",
    ),
    Rule(r"^ddb-audit (audit|athena) ", why="reads a live AWS account (the test checks that it parses)"),
    Rule(r"^(echo .* \| )?ddb-audit ", run=True),
    Rule(r"^sed .* docs/iam/\S+\.json > \S+\.json$", run=True),
)

#: The analysis of ``audit --format json`` that ``what-if --audit audit.json`` reads in the scratch directory.
AUDIT_JSON = {
    "tables": [
        {
            "table": "Orders",
            "billing_mode": "PROVISIONED",
            "capacity": [
                {
                    "index": None,
                    "billing_mode": "PROVISIONED",
                    "period_seconds": 60,
                    "peak_read_per_second": 40.0,
                    "peak_write_per_second": 300.0,
                    "provisioned_read": 100,
                    "provisioned_write": 500,
                }
            ],
        }
    ]
}


def _commands(page: Path) -> list[Command]:
    """The commands of ``page``'s shell blocks, each with the comment line that follows it (expected output)."""
    name = page.relative_to(ROOT).as_posix()
    out: list[Command] = []
    for block in SHELL_FENCE.finditer(page.read_text()):
        pending = ""
        first = len(out)
        for line in textwrap.dedent(block.group(2)).splitlines():
            if not pending and line.lstrip().startswith("#"):
                if len(out) > first and out[-1].expected is None:
                    out[-1] = Command(name, out[-1].text, line.lstrip("# ").strip())
                continue
            pending = f"{pending}\n{line}" if pending else line
            if pending.endswith("\\"):
                pending = pending[:-1]
                continue
            lexer = shlex.shlex(pending, posix=False)
            lexer.whitespace_split = True
            lexer.commenters = ""
            try:
                words = list(lexer)
            except ValueError:  # an unclosed quote: the command goes on on the next line
                continue
            words = words[: next((i for i, w in enumerate(words) if w.startswith("#")), len(words))]
            if words:
                out.append(Command(name, " ".join(words)))
            pending = ""
        assert not pending, f"{name}: unfinished command in a shell block: {pending!r}"
    return out


COMMANDS = [c for page in PAGES for c in _commands(page)]


def _rule(command: Command) -> Rule | None:
    return next((r for r in RULES if re.search(r.pattern, command.text)), None)


def test_the_docs_have_commands() -> None:
    assert len(COMMANDS) > 20
    assert any(c.page == "README.md" for c in COMMANDS)


def test_every_documented_command_is_run_by_a_test_or_says_why_not() -> None:
    orphans = [f"{c.page}: {c.text}" for c in COMMANDS if _rule(c) is None]
    assert not orphans, f"add these commands to RULES (run here, the test that runs them, or why none can): {orphans}"


def test_every_rule_has_one_verdict_and_names_a_test_that_exists() -> None:
    for rule in RULES:
        assert rule.run + bool(rule.test) + bool(rule.why) == 1, rule
        if rule.test:
            path, name = rule.test.split("::")
            assert re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.M), rule.test


def _ddb_audit_args(text: str) -> list[list[str]]:
    """The arguments of every ``ddb-audit`` program in a command line (up to its pipe or redirection)."""
    words = shlex.split(text)
    found = []
    for i, word in enumerate(words):
        if word == "ddb-audit":
            end = next((j for j in range(i + 1, len(words)) if words[j] in OPERATORS), len(words))
            found.append(words[i + 1 : end])
    return found


def test_every_documented_ddb_audit_command_parses() -> None:
    """The options the docs use exist (and take the values shown): the real parser accepts every command."""
    failures = []
    for command in COMMANDS:
        for args in _ddb_audit_args(command.text):
            try:
                build_parser().parse_args(args)
            except SystemExit as exc:
                if exc.code != 0:  # --help and --version exit 0
                    failures.append(f"{command.page}: {command.text}")
    assert not failures, failures


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory holding what the documented commands read: a trail, histories, a price and mute file,
    and the docs (the IAM policy templates)."""
    here = tmp_path_factory.mktemp("docs-commands")
    records = demo_workload(datetime(2026, 12, 1, 9, tzinfo=UTC), hours=0.25)
    write_trail(records, here / "trail")
    shutil.copytree(here / "trail", here / "logs")
    shutil.copytree(ROOT / "examples", here / "examples")
    shutil.copytree(DOCS, here / "docs")
    shutil.copy(ROOT / "examples" / "billing" / "spiky-on-demand.json", here / "history.json")
    (here / "audit.json").write_text(json.dumps(AUDIT_JSON))
    # The price file and the mute list are the ones the docs show.
    (here / "eu-west-1-prices.json").write_text(_json_block(DOCS / "commands" / "billing.md", '"standard_ia"'))
    (here / ".ddb-audit-mutes.json").write_text(_json_block(DOCS / "commands" / "index.md", '"reporting-*"'))
    return here


def _json_block(page: Path, marker: str) -> str:
    blocks = [b for b in re.findall(r"^```json\n(.*?)^```", page.read_text(), re.M | re.S) if marker in b]
    assert len(blocks) == 1, f"{page.name}: one json block with {marker}"
    json.loads(blocks[0])
    return str(blocks[0])


RUN = [c for c in COMMANDS if (r := _rule(c)) is not None and r.run]


@pytest.mark.parametrize("command", RUN, ids=[f"{c.page}: {c.text[:60]}" for c in RUN])
def test_the_documented_command_runs(command: Command, scratch: Path) -> None:
    """Exit 0, or 1 (findings at or above ``--fail-on``); the output a comment shows after the command is printed,
    and a ``.json`` file it writes holds JSON."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("AWS_PROFILE", None)
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command.text],
        cwd=scratch,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode in (0, 1), f"{command.page}: {command.text}\n{done.stderr[-2000:]}"
    if command.expected is not None and command.expected.startswith(("[", "{")):
        assert json.loads(done.stdout) == json.loads(command.expected)
    for written in re.findall(r"> (\S+\.json)\b", command.text):  # a JSON file the command writes is JSON
        json.loads((scratch / written).read_text())


# ---- the command pages follow --help ------------------------------------------------------------------------


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _options(parser: argparse.ArgumentParser) -> set[str]:
    """The long options ``--help`` prints (a hidden one, such as an old spelling kept working, is not listed)."""
    return {
        o
        for a in parser._actions
        if a.help != argparse.SUPPRESS
        for o in a.option_strings
        if o.startswith("--") and o != "--help"
    }


def _table_options(page: Path) -> set[str]:
    """The options of the page's first ``| option | ... |`` table (its first column)."""
    text = page.read_text()
    start = text.index("\n| option |")
    table = text[start + 1 : text.index("\n\n", start)]
    return {o for row in table.splitlines()[2:] for o in re.findall(r"`(--[a-z][a-z0-9-]*)", row.split(" | ")[0])}


def test_every_command_has_a_page_and_every_page_a_command() -> None:
    pages = {p.stem for p in (DOCS / "commands").glob("*.md")} - {"index"}
    assert pages == set(_subparsers())


def test_each_command_page_lists_exactly_its_options() -> None:
    shared = _table_options(DOCS / "commands" / "index.md")
    problems = []
    everywhere: set[str] = set()
    for name, parser in _subparsers().items():
        real = _options(parser)
        everywhere |= real
        listed = _table_options(DOCS / "commands" / f"{name}.md")
        if missing := sorted(real - listed - shared):
            problems.append(f"docs/commands/{name}.md: add {missing} (ddb-audit {name} --help lists them)")
        if unknown := sorted(listed - real):
            problems.append(f"docs/commands/{name}.md: {unknown} are not options of ddb-audit {name}")
    if unknown := sorted(shared - everywhere):
        problems.append(f"docs/commands/index.md: {unknown} are options of no command")
    assert not problems, problems


def _slug(heading: str) -> str:
    """The anchor MkDocs and GitHub give a heading (Python-Markdown's ``toc`` slug)."""
    text = re.sub(r"[^\w\s-]", "", re.sub(r"[`*]", "", heading)).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


# ---- README: a front door --------------------------------------------------------------------------------------


def test_the_readme_is_a_front_door() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 300


def test_the_readme_links_reach_pages_and_headings() -> None:
    """mkdocs checks the links inside docs/; README is outside the site, so its links are checked here."""
    broken = []
    for target in re.findall(r"\]\((?!https?://)([^)\s]+)\)", (ROOT / "README.md").read_text()):
        path, _, anchor = target.partition("#")
        page = ROOT / path
        if not page.exists():
            broken.append(target)
        elif anchor:
            headings = re.findall(r"^#+ (.+)$", page.read_text(), re.M)
            if anchor not in {_slug(h) for h in headings}:
                broken.append(target)
    assert not broken, broken


def test_every_finding_kind_has_a_page_the_readme_links() -> None:
    from auditor.models.finding import FindingKind

    readme = (ROOT / "README.md").read_text()
    index = (DOCS / "findings" / "index.md").read_text()
    for kind in FindingKind:
        assert (DOCS / "findings" / f"{kind.value}.md").is_file(), kind
        assert f"(docs/findings/{kind.value}.md)" in readme, kind
        assert f"({kind.value}.md)" in index, kind


#: An issue number ("issue 27", "issues 12 to 20", "(#31)") or a commit hash (7 to 40 hex digits, letters and digits).
HISTORY = re.compile(r"\b[Ii]ssues? #?\d+|\(#\d+\)|(?<![\w-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w-])")
#: Hex words that are neither: the example of an internal error's short id.
NOT_HISTORY = {"1a2b3c4d"}


def test_no_page_tells_history_by_commit_or_issue() -> None:
    found = [
        f"{page.relative_to(ROOT)}:{n}: {m.group(0)}"
        for page in PAGES
        for n, line in enumerate(page.read_text().splitlines(), 1)
        for m in HISTORY.finditer(line)
        if m.group(0) not in NOT_HISTORY
    ]
    assert not found, found
