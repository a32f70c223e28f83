"""`python -m benchctl` and every subcommand explain themselves with --help."""

import subprocess
import sys

import pytest

from benchctl import _cli as cli


def _run(*args):
    return subprocess.run([sys.executable, "-m", "benchctl", *args], capture_output=True, text=True, timeout=120)


def test_top_level_help_lists_every_command():
    out = _run("--help")
    assert out.returncode == 0, out.stderr
    for module in cli.COMMAND_MODULES:
        name = __import__(module, fromlist=["NAME"]).NAME
        assert name in out.stdout


@pytest.mark.parametrize("module", cli.COMMAND_MODULES)
def test_each_command_has_help(module):
    name = __import__(module, fromlist=["NAME"]).NAME
    out = _run(name, "--help")
    assert out.returncode == 0, out.stderr
    assert "usage:" in out.stdout


def test_missing_command_is_a_usage_error():
    out = _run()
    assert out.returncode == 2
    assert "COMMAND" in out.stderr


def test_run_help_lists_every_setting_from_its_own_help():
    from benchctl.settings import SETTINGS

    out = _run("run", "--help")
    assert out.returncode == 0, out.stderr
    listed = " ".join(out.stdout.split())  # the listing wraps long help texts
    for name, setting in SETTINGS.items():
        assert setting.help, f"{name} has no help"
        assert f"{name} {setting.help}" in listed, name
