"""The documentation: the MkDocs site builds with --strict (no broken link between pages,
no link to a missing heading, no page left out of the navigation), and every relative link
in README.md and docs/*.md resolves as GitHub renders them (a file that exists, a heading
that exists). Fast: no compile, about two seconds."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

README_MAX_LINES = 300  # the README is a newcomer's first page; the rest lives in docs/

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^()\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def mkdocs_build(config: Path, site_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
         "--site-dir", str(site_dir)],
        cwd=config.parent, capture_output=True, text=True, timeout=120)


def outside_fences(text: str):
    """(line number, line) of the lines that are not inside a fenced code block."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def github_anchors(markdown: Path) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings: lower case, punctuation dropped,
    each space a hyphen, a repeated slug suffixed -1, -2, ..."""
    seen: dict[str, int] = {}
    anchors = set()
    for _, line in outside_fences(markdown.read_text()):
        match = HEADING.match(line)
        if not match:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(2))  # a link keeps its text
        text = text.replace("`", "").replace("*", "").lower()
        slug = "".join(ch for ch in text if ch.isalnum() or ch in "-_ ").replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def broken_links(markdown: Path, root: Path) -> list[str]:
    """Every relative link in a Markdown file whose file or heading does not exist, as
    'FILE:LINE: link (what is wrong)'. Links in code (fenced or inline) are not links."""
    problems = []
    for number, line in outside_fences(markdown.read_text()):
        for target in LINK.findall(INLINE_CODE.sub("``", line)):
            if SCHEME.match(target):
                continue  # https:, mailto:: not checked here (no network)
            where = f"{markdown.relative_to(root)}:{number}: {target}"
            path, _, anchor = target.partition("#")
            if path.startswith("/"):
                problems.append(f"{where} (an absolute path: write it relative to the file)")
                continue
            resolved = (markdown.parent / path).resolve() if path else markdown
            if not resolved.exists():
                problems.append(f"{where} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in github_anchors(resolved):
                problems.append(f"{where} (no heading with anchor #{anchor} in {resolved.name})")
    return problems


def test_site_builds_strict_without_warnings(tmp_path):
    result = mkdocs_build(REPO / "mkdocs.yml", tmp_path / "site")
    output = result.stdout + result.stderr
    if "No module named mkdocs" in output:
        pytest.fail("mkdocs is not installed: run ./scripts/setup.sh (requirements-dev.txt pins it)")
    assert result.returncode == 0 and "WARNING" not in output, output
    assert (tmp_path / "site" / "index.html").exists()
    # The home page is the README (docs/index.md includes it), its links rewritten to the pages.
    home = (tmp_path / "site" / "index.html").read_text()
    assert "Where to go next" in home and 'href="commands/"' in home


def test_site_config_reports_broken_links_anchors_and_pages_left_out(tmp_path):
    """The validation settings in mkdocs.yml stay strict: a copy of the docs with a link to a
    missing page, a missing heading, a file outside docs/, a link MkDocs cannot resolve (a
    folder) and a page not in the nav fails on each of them."""
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    with open(tmp_path / "docs" / "commands.md", "a") as page:
        page.write("\n[a](no-such-page.md) [b](targets.md#no-such-heading) [c](../scripts/setup.sh)"
                   " [d](../scripts/)\n")
    (tmp_path / "docs" / "orphan.md").write_text("# A page nobody put in the nav\n")
    result = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    # Each problem must be a warning (so --strict fails on it alone), not an INFO line.
    warnings = [record for record in re.split(r"\n(?=[A-Z]+\s+-  )", output) if record.startswith("WARNING")]
    for expected in ("'no-such-page.md'", "anchor '#no-such-heading'", "'../scripts/setup.sh'",
                     "unrecognized relative link '../scripts/'", "orphan.md"):
        assert any(expected in warning for warning in warnings), output


def test_readme_and_pages_links_resolve_on_github():
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    problems = [problem for markdown in files for problem in broken_links(markdown, REPO)]
    assert not problems, "broken links:\n" + "\n".join(problems)
    readme_links = [target for _, line in outside_fences((REPO / "README.md").read_text())
                    for target in LINK.findall(INLINE_CODE.sub("``", line))]
    assert any(target.startswith("docs/") for target in readme_links)  # the README leads on


def test_link_checker_finds_missing_files_and_headings(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Page\n\n## Exit codes\n\n## Exit codes\n")
    (tmp_path / "README.md").write_text(
        "# Title `x`\n\n"
        "[ok](docs/page.md#exit-codes) [ok](docs/page.md#exit-codes-1) [ok](#title-x)\n"
        "[web](https://example.org/missing) `[code](missing.md)`\n"
        "```\n[fenced](missing.md)\n```\n"
        "[gone](docs/missing.md) [bad anchor](docs/page.md#exit) [self](#nothing) [abs](/docs/page.md)\n")
    problems = broken_links(tmp_path / "README.md", tmp_path)
    assert [problem.split(": ", 1)[1].split(" (")[0] for problem in problems] == [
        "docs/missing.md", "docs/page.md#exit", "#nothing", "/docs/page.md"]
    assert all(problem.startswith("README.md:8: ") for problem in problems)


def test_readme_stays_short():
    lines = len((REPO / "README.md").read_text().splitlines())
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move the details to a page in docs/")
