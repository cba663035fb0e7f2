"""What a person meets first on the command line: every option explained, a mistake answered with the
usage of the command it was made in, and ``autoscaler --help`` without the commands' machinery."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from autoscaler.cli import build_parser
from autoscaler.cli.parser import CommandsParser


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    assert isinstance(parser, CommandsParser)
    return dict(parser.commands)


def test_every_option_of_every_command_has_help() -> None:
    missing = [
        f"{name} {'/'.join(action.option_strings) or action.dest}"
        for name, command in _commands().items()
        for action in command._actions  # argparse keeps a parser's arguments only here
        if not action.help and not isinstance(action, argparse._HelpAction)
    ]
    assert missing == []


@pytest.mark.parametrize("command", sorted(_commands()))
def test_an_unknown_option_prints_the_commands_usage(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    required = {
        "simulate": ["s.yaml"],
        "backtest": ["t.yaml"],
        "convert": ["hpa.yaml"],
        "explain": ["web"],
        "scenario": ["--from-recording", "rec.jsonl", "--target", "default/web"],
    }
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args([command, *required.get(command, []), "--no-such-option"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: autoscaler {command} ")
    assert f"autoscaler {command}: error: unrecognized arguments: --no-such-option" in err


def test_top_level_help_loads_neither_asyncio_nor_a_commands_machinery() -> None:
    code = (
        "import sys\nfrom autoscaler.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert "usage: autoscaler" in result.stdout
    loaded = set(result.stderr.split())
    assert not {m for m in loaded if m == "asyncio" or m.startswith("asyncio.")}
    assert "tempfile" not in loaded
    # limits.py is constants only, kept apart so that backtest's help can name them.
    assert {m for m in loaded if m.startswith("autoscaler.backtest")} <= {
        "autoscaler.backtest",
        "autoscaler.backtest.limits",
    }
