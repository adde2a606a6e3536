"""docs/contract.md documents every option ``--help`` lists: each command's own options in its section, the options
every command shares (``--quiet``, ``--debug``, the output and AWS options) in theirs; and every renamed option."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from auditor.cli import build_parser

CONTRACT = (Path(__file__).resolve().parents[2] / "docs" / "contract.md").read_text(encoding="utf-8")
#: The sections that document options more than one command takes.
SHARED = ("Options of every command", "AWS options", "Output formats", "Renamed options")


def _sections() -> dict[str, str]:
    """Each ``###`` section of the contract by its title's first words (``ddb-audit audit``, ``Output formats``)."""
    parts = re.split(r"^### ", CONTRACT, flags=re.MULTILINE)[1:]
    return {part.split("\n", 1)[0].strip("`").split(" [")[0]: part for part in parts}


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _listed(parser: argparse.ArgumentParser) -> list[str]:
    """The options ``--help`` lists (every name of each)."""
    return [o for a in parser._actions if a.help != argparse.SUPPRESS for o in a.option_strings]


@pytest.mark.parametrize("command", list(_commands()))
def test_every_option_of_every_command_is_documented(command: str) -> None:
    sections = _sections()
    own = next((text for title, text in sections.items() if title.startswith(f"ddb-audit {command}")), None)
    assert own is not None, f"docs/contract.md has no section for ddb-audit {command}"
    shared = "".join(sections[title] for title in SHARED)
    missing = [o for o in _listed(_commands()[command]) if not re.search(rf"`{re.escape(o)}[` /]", own + shared)]
    assert not missing, f"document these options of {command} in docs/contract.md: {missing}"


def test_the_top_level_options_are_documented() -> None:
    text = _sections()["Options of every command"]
    for option in _listed(build_parser()):
        assert re.search(rf"`(ddb-audit )?{re.escape(option)}[` /]", text), option


def test_every_deprecated_alias_is_in_the_renamed_table() -> None:
    table = _sections()["Renamed options"]
    for command, parser in _commands().items():
        for action in parser._actions:
            if action.help == argparse.SUPPRESS and action.option_strings and action.dest not in ("debug", "seed"):
                for old in action.option_strings:
                    assert f"`{old}`" in table, f"{command} {old}"
