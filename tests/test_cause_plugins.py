"""Causes from other packages: a package that declares a ``benchctl.causes`` entry point adds its setting,
probe and rule to benchctl's registries, and explain probes and names its cause.

The package is installed as Python installs one (its files on the path, its ``.dist-info`` with an
``entry_points.txt``), in a folder of the test's own, and every check runs in a fresh interpreter whose
path holds it: the registries are read once, at import.
"""

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The outside cause README.md and docs/causes.md show: a setting that starts the worker with DEMO_FAST=1
# (docs/causes.md's setting.py), and the rule that names the cause when that cell is faster.
def _shown(page, name):
    block = re.search(rf"```python\n(# mypkg/demo_cause/{name}\n.*?)```", open(os.path.join(ROOT, page)).read(), re.S)
    assert block, f"{page} shows mypkg/demo_cause/{name}"
    return block.group(1)


SETTING = _shown(os.path.join("docs", "causes.md"), "setting.py")
RULE = _shown("README.md", "rule.py")
assert RULE == _shown(os.path.join("docs", "causes.md"), "rule.py"), "README.md and docs/causes.md show one rule"
WORKLOAD = '''
import os
import time


def step():
    time.sleep(0.0005 if os.environ.get("DEMO_FAST") == "1" else 0.02)
'''


@pytest.fixture
def installed(tmp_path):
    """A folder holding the installed package ``democause`` and its metadata; the environment to run with it."""
    package = tmp_path / "site" / "democause"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "setting.py").write_text(textwrap.dedent(SETTING))
    (package / "rule.py").write_text(textwrap.dedent(RULE))
    info = tmp_path / "site" / "democause-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: democause\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[benchctl.causes]\ndemo = democause\n")
    (tmp_path / "demo_workload.py").write_text(textwrap.dedent(WORKLOAD))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])}
    return tmp_path, env


def _python(code, env):
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_registries_gather_an_installed_packages_setting_and_cause(installed):
    _, env = installed
    seen = json.loads(_python("import json; from benchctl import settings; from benchctl._studies import causes; "
                              "print(json.dumps([list(settings.SETTINGS), [c.name for c in causes.CAUSES]]))", env))
    assert "demo_fast" in seen[0] and seen[1][-1] == "demo"
    # Without the package on the path, nothing of it is there.
    plain = json.loads(_python("import json; from benchctl import settings; print(json.dumps(list(settings.SETTINGS)))",
                               {**os.environ}))
    assert "demo_fast" not in plain


def test_a_package_that_fails_to_load_is_named_and_left_out(installed):
    tmp_path, env = installed
    (tmp_path / "site" / "democause" / "rule.py").write_text("raise ImportError('broken on purpose')\n")
    proc = subprocess.run([sys.executable, "-c", "from benchctl._studies import causes; "
                           "print([c.name for c in causes.CAUSES][-1])"], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() != "demo"
    assert "the cause package 'democause'" in proc.stderr and "broken on purpose" in proc.stderr


@pytest.mark.slow
def test_explain_probes_and_names_an_installed_packages_cause(installed):
    tmp_path, env = installed
    out = tmp_path / "demo.json"
    proc = subprocess.run([sys.executable, "-m", "benchctl", "explain", f"{tmp_path}/demo_workload.py:step",
                           "--budget", "40", "--no-progress", "--json", str(out)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = {f["rule"]: f for f in json.loads(out.read_text())["verdict"]}
    assert found["cause_demo"]["status"] == "cause", found["cause_demo"]["message"]
    assert "the demo sleep" in proc.stdout
