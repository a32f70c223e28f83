"""The README and the pages under docs/ (issue 37): every relative link resolves, the README keeps the
three ```bash blocks .ci/run reads (the install, the fast tier, the slow tier), every page is in
mkdocs.yml's nav, and the pages build as a site with MkDocs in strict mode."""

import glob
import os
import re
import shutil
import subprocess
import sys
from urllib.parse import unquote

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
DOCS = os.path.join(ROOT, "docs")

# An inline link or image, [text](target "title"), and a reference definition, [name]: target.
_INLINE = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
_CODE_SPAN = re.compile(r"(`+).*?\1")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _pages() -> list[str]:
    return sorted(glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True))


def _links(path: str):
    """(line number, target) of every link in the Markdown file, outside code blocks and code spans."""
    fence = None
    for number, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        stripped = line.lstrip()
        marker = re.match(r"(```+|~~~+)", stripped)
        if marker:
            if fence is None:
                fence = marker.group(1)
            elif stripped.rstrip() == fence[0] * len(stripped.rstrip()) and len(stripped.rstrip()) >= len(fence):
                fence = None
            continue
        if fence is not None:
            continue
        text = _CODE_SPAN.sub("", line)
        for target in _INLINE.findall(text) + _REFERENCE.findall(text):
            yield number, target


def test_relative_links_resolve():
    broken, checked = [], 0
    for path in [README] + _pages():
        for number, target in _links(path):
            if _SCHEME.match(target) or target.startswith("#"):
                continue  # a URL, or an anchor of the same page (mkdocs --strict checks the pages' anchors)
            checked += 1
            where = f"{os.path.relpath(path, ROOT)}:{number}: {target}"
            file_part = unquote(target.split("#", 1)[0].split("?", 1)[0])
            if os.path.isabs(file_part):
                broken.append(f"{where} (an absolute path: links must be relative)")
            elif not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(path), file_part))):
                broken.append(f"{where} (no such file)")
    assert checked > 0, "no relative link found: the link pattern no longer matches"
    assert not broken, "broken relative links:\n" + "\n".join(broken)


def _bash_blocks(text: str) -> list[str]:
    """The bodies of the ```bash blocks, read as .ci/run's readme_block reads them: a line that is
    exactly ```bash opens one, a line that is exactly ``` closes it."""
    blocks, current = [], None
    for line in text.split("\n"):
        if line == "```bash":
            current = []
            blocks.append(current)
        elif line == "```":
            current = None
        elif current is not None:
            current.append(line)
    return ["\n".join(block) for block in blocks]


def test_readme_has_the_three_bash_blocks_ci_runs():
    text = open(README, encoding="utf-8").read()
    # Any other fence that names bash would be read by .ci/run or silently skipped by it: the other
    # examples use text, python, console or sh.
    bash_fences = [line for line in text.split("\n") if re.match(r"\s*(`{3,}|~{3,})\s*bash\b", line)]
    assert bash_fences == ["```bash"] * 3, f"README.md must have exactly three ```bash fences, it has {bash_fences}"
    install, fast, slow = _bash_blocks(text)
    assert "pip install" in install and "python bench/resnet_order.py" in install, install
    assert "pytest" in fast and '-m "not slow"' in fast, fast
    assert "pytest" in slow and "-m slow" in slow and "not slow" not in slow, slow


def test_ci_reads_the_same_blocks():
    """.ci/run's own readme_block function, run on the README, gives the blocks the test above checks."""
    if shutil.which("bash") is None or shutil.which("awk") is None:
        pytest.skip("no bash or awk on PATH")
    ci = open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8").read()
    function = re.search(r"^readme_block\(\) \{\n.*?^\}", ci, re.S | re.M)
    assert function, ".ci/run no longer defines readme_block(): update this test with it"
    expected = _bash_blocks(open(README, encoding="utf-8").read())
    for n, body in enumerate(expected, 1):
        got = subprocess.run(["bash", "-c", function.group(0) + '\nreadme_block "$1"', "readme_block", str(n)],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout
        assert got.rstrip("\n") == body.rstrip("\n"), f"block {n}: .ci/run reads {got!r}"


def test_every_page_is_in_the_nav():
    nav = open(os.path.join(ROOT, "mkdocs.yml"), encoding="utf-8").read()
    listed = set(re.findall(r"^\s*-\s*(?:[^:\n]+:\s*)?(\S+\.md)\s*$", nav, re.M))
    pages = {os.path.relpath(p, DOCS).replace(os.sep, "/") for p in _pages()}
    assert pages - listed == set(), "pages not in mkdocs.yml's nav"
    assert listed - pages == set(), "nav entries without a page"


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="MkDocs is not installed (pip install '.[docs]'; the test extra has it)")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "--config-file", os.path.join(ROOT, "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert os.path.exists(tmp_path / "site" / "index.html")


def test_the_cause_table_lists_every_registered_cause_in_the_answers_order():
    from benchctl._studies.causes import CAUSES

    lines = open(os.path.join(ROOT, "docs", "causes.md")).read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| cause (`name`)")) + 2
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    assert [line.split("`")[1] for line in lines[start:end]] == [cause.name for cause in CAUSES]
