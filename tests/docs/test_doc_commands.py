"""Every command of README.md and docs/*.md, run as written.

A fenced block marked ``bash``, ``sh`` or ``shell`` holds commands (``console``: the lines
that start with ``$ ``). Each such block either runs here or has, right above it, a comment
that says why not:

    <!-- not run by the tests: REASON -->

The install steps (``python3 -m venv ...``, ``. .venv/bin/activate``, ``pip install ...``,
``pip uninstall ...``, on their own or leading a line joined with ``&&``) are not run: these
tests run in an environment that is installed already, and the fresh-clone CI run (.ci/run:
a new virtualenv, ``pip install tox``, ``tox``, which installs the package and its extras)
is what checks them. The rest of a block runs as one bash script (``set -e``) in a fresh
directory laid out as a checkout: symlinks to the repository's top-level files and folders
(so ``trainers/configs/...`` resolves as from the repository's root), inside a parent that
holds ``shared/data``, leading to the benchmark data, so the docs' ``../shared/data/...``
paths resolve. ``codea1`` is this environment's (PATH starts with its interpreter's folder).
A block passes when it exits 0 and every ``--out DIR`` it names exists.

A comment ``<!-- test: ITEM; ITEM -->`` right above a block says more:

    long                   marked ``long``: left to ``tox -e long`` (a training run, minutes)
    id=NAME                a name other blocks can start from
    after=NAME,NAME        start from a copy of the files those blocks left (running them
                           first when this session has not)
    needs=MODULE,MODULE    skipped, with the reason, where a module is not installed (an extra)
    needs-command=BIN      skipped, with the reason, where BIN is not on PATH

A block that reads ``../shared/data`` (itself, or through a training config it names) is
marked ``data`` and skipped where the data is absent, as every data test is. A ``text`` block
with ``<!-- test: output of the block above -->`` right above it lists lines that the
command block before it prints: each must be a line of its output.

Also here: every fence names its language (so no command hides in a plain block), every
relative link between the pages leads to a file that exists (and to a heading, with #), and
every repository path the pages name exists.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import ROOT, SHARED_DATA

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND_LANGUAGES = {"bash", "sh", "shell", "console"}
EXEMPT = re.compile(r"^<!--\s*not run by the tests(?: as written)?:\s*(?P<reason>.*?)\s*-->$")
ANNOTATION = re.compile(r"^<!--\s*test:\s*(?P<items>.*?)\s*-->$")
INSTALL_STEP = re.compile(r"^\s*(python3? -m venv\b|\.\s+\S*activate\b|source\s+\S*activate\b"
                          r"|(\S*/)?pip3?\s+(install|uninstall)\b)")
HEREDOC = re.compile(r"<<-?\s*'?\"?(\w+)'?\"?")
CONFIG = re.compile(r"trainers/configs/[\w.-]+\.toml")
OUT_DIR = re.compile(r"--out\s+(\S+)")
DEFAULT_TIMEOUT_S, LONG_TIMEOUT_S = 600, 3600


@dataclass
class Block:
    page: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    language: str
    text: str
    comment: str = ""  # the comment right above the fence, if any
    exempt: str | None = None  # the reason it is not run
    items: dict = field(default_factory=dict)  # the test: annotation
    output: list[str] = field(default_factory=list)  # lines shown as its output

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def long(self) -> bool:
        return "long" in self.items

    @property
    def block_id(self) -> str | None:
        return self.items.get("id")

    @property
    def after(self) -> list[str]:
        return [n for n in self.items.get("after", "").split(",") if n]

    @property
    def needs(self) -> list[str]:
        return [n for n in self.items.get("needs", "").split(",") if n]


def parse_items(text: str) -> dict:
    items = {}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        key, _, value = item.partition("=")
        items[key.strip()] = value.strip()
    return items


def read_blocks(path: Path) -> list[Block]:
    """The fenced blocks of a page, each with the comment right above it (blank lines
    allowed in between)."""
    lines = path.read_text().splitlines()
    page = path.relative_to(ROOT).as_posix()
    blocks, i = [], 0
    while i < len(lines):
        fence = re.match(r"^(`{3,})(\S*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith(fence.group(1)))
        above = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        block = Block(page, i + 1, fence.group(2), "\n".join(lines[i + 1:end]) + "\n",
                      comment=above if above.startswith("<!--") else "")
        if m := EXEMPT.match(block.comment):
            block.exempt = m.group("reason")
        elif m := ANNOTATION.match(block.comment):
            block.items = parse_items(m.group("items"))
        blocks.append(block)
        i = end + 1
    for k, block in enumerate(blocks):  # shown output goes with the command block before it
        if block.items.get("output of the block above") == "" and k:
            blocks[k - 1].output = [line.rstrip() for line in block.text.splitlines() if line.strip()]
    return blocks


ALL_BLOCKS = [block for page in PAGES for block in read_blocks(page)]
COMMAND_BLOCKS = [b for b in ALL_BLOCKS if b.language in COMMAND_LANGUAGES]
BY_ID = {b.block_id: b for b in COMMAND_BLOCKS if b.block_id}


def logical_lines(block: Block) -> list[tuple[str, bool]]:
    """(line, is_heredoc_body) with backslash continuations joined; a console block's
    commands only."""
    raw = block.text.splitlines()
    if block.language == "console":
        raw = [line[2:] for line in raw if line.startswith("$ ")]
    out, joined, heredoc_end = [], "", None
    for line in raw:
        if heredoc_end is not None:
            out.append((line, True))
            if line.strip() == heredoc_end:
                heredoc_end = None
            continue
        if line.endswith("\\"):
            joined += line[:-1]
            continue
        line, joined = joined + line, ""
        out.append((line, False))
        if m := HEREDOC.search(line):
            heredoc_end = m.group(1)
    return out


def runnable_script(block: Block) -> str:
    """The block as it runs here: install steps left out (see the module docstring)."""
    kept = []
    for line, in_heredoc in logical_lines(block):
        if in_heredoc:
            kept.append(line)
            continue
        parts = line.split("&&")
        while parts and INSTALL_STEP.match(parts[0]):
            parts.pop(0)
        rest = "&&".join(parts).strip()
        assert not any(INSTALL_STEP.match(p) for p in parts), \
            f"{block.name}: an install step after a command in {line!r}: put it on a line of its own"
        if rest and not rest.startswith("#"):
            kept.append(rest)
    return "\n".join(kept) + "\n" if kept else ""


def command_part(block: Block) -> str:
    return "\n".join(line for line, in_heredoc in logical_lines(block) if not in_heredoc)


def reads_shared_data(block: Block) -> bool:
    text = block.text
    for config in CONFIG.findall(text):
        path = ROOT / config
        if path.exists():
            text += path.read_text()
    return "../shared/" in text or any(reads_shared_data(BY_ID[n]) for n in block.after if n in BY_ID)


def all_needs(block: Block) -> tuple[list[str], list[str]]:
    modules, commands = list(block.needs), [c for c in block.items.get("needs-command", "").split(",") if c]
    for name in block.after:
        if name in BY_ID:
            more_modules, more_commands = all_needs(BY_ID[name])
            modules += more_modules
            commands += more_commands
    return modules, commands


RUN_BLOCKS = [b for b in COMMAND_BLOCKS if not b.exempt and runnable_script(b)]


def marks(block: Block) -> list:
    found = [pytest.mark.xdist_group("docs")]  # one worker: blocks start from each other's files
    if block.long:
        found.append(pytest.mark.long)
    if reads_shared_data(block):
        found.append(pytest.mark.data)
    return found


# -- the checks on the pages themselves ---------------------------------------------------------

def test_every_fence_names_its_language():
    bare = [b.name for b in ALL_BLOCKS if not b.language]
    assert not bare, f"fenced blocks without a language (```bash for commands, ```text for the rest): {bare}"


def test_every_command_block_runs_or_says_why_not():
    problems = []
    known = {"long", "id", "after", "needs", "needs-command"}
    for block in COMMAND_BLOCKS:
        if block.comment.startswith("<!-- not run") and not block.exempt:
            problems.append(f"{block.name}: a 'not run by the tests' comment needs a reason after the colon")
        if unknown := set(block.items) - known:
            problems.append(f"{block.name}: unknown test annotation {sorted(unknown)} (known: {sorted(known)})")
        for name in block.after:
            if name not in BY_ID:
                problems.append(f"{block.name}: after={name}: no block has id={name}")
            elif BY_ID[name].long and not block.long:
                problems.append(f"{block.name}: runs by default but starts after the long block {name}")
        if not block.exempt and not runnable_script(block) and block.comment:
            problems.append(f"{block.name}: only install steps, yet annotated {block.comment!r}")
    for block in ALL_BLOCKS:
        if block not in COMMAND_BLOCKS and set(block.items) - {"output of the block above"}:
            problems.append(f"{block.name}: a {block.language} block takes no annotation but "
                            f"'output of the block above'")
        if "output of the block above" in block.items:
            before = [b for b in ALL_BLOCKS if b.page == block.page and b.line < block.line]
            if not before or before[-1] not in RUN_BLOCKS:
                problems.append(f"{block.name}: shown as output, but the block above it is not run")
    assert not problems, "\n".join(problems)


def heading_slugs(path: Path) -> set[str]:
    """GitHub's anchors for a page's headings."""
    slugs = set()
    for line in path.read_text().splitlines():
        if m := re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line):
            text = re.sub(r"[`*]", "", m.group(1)).lower()
            slugs.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text)))
    return slugs


def test_relative_links_lead_somewhere():
    broken = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # code is not links
        text = re.sub(r"`[^`\n]*`", "", text)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in heading_slugs(path):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


REPO_PATH = re.compile(r"(?<![\w/.~-])((?:harness|plugins|benchmarks|trainers|reports|scripts|tests|requirements"
                       r"|codea1|docs)/[\w/.+-]*[\w/])")


def test_the_repository_paths_the_pages_name_exist():
    """A file or folder named in the text (harness/verdicts/judge.py, scripts/...) exists, so a
    move inside the repository shows up here; and every module the layout page lists by name
    exists somewhere in the tree."""
    missing = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        missing += [f"{page.relative_to(ROOT)}: {path}" for path in REPO_PATH.findall(text)
                    if not (ROOT / path).exists()]
    modules = {path.name for folder in ("codea1", "harness", "plugins", "benchmarks", "trainers", "reports", "scripts", "tests")
               for path in (ROOT / folder).rglob("*.py")}
    layout = next(b for b in ALL_BLOCKS if b.page == "docs/layout.md" and b.language == "text").text
    for choices, single in re.findall(r"\{([\w,]+)\}\.py|\b(\w+\.py)\b", layout):
        names = [f"{name}.py" for name in choices.split(",")] if choices else [single]
        missing += [f"docs/layout.md: {name}" for name in names
                    if name not in modules and not name.startswith("test_")]
    assert not missing, "named but not found:\n" + "\n".join(missing)


# -- running the commands ---------------------------------------------------------------------------

@dataclass
class Ran:
    directory: Path
    stdout: str
    stderr: str
    returncode: int


RAN: dict[str, Ran] = {}  # by block name, for this session (xdist: this worker)


def checkout_like(parent: Path) -> Path:
    """A fresh directory that reads as the repository's root, inside a parent holding
    shared/data."""
    shared = parent / "shared"
    shared.mkdir(exist_ok=True)
    if SHARED_DATA.exists() and not (shared / "data").exists():
        (shared / "data").symlink_to(SHARED_DATA.resolve())
    work = parent / "checkout"
    work.mkdir()
    for entry in ROOT.iterdir():
        if (entry.name.startswith(".") or entry.name in ("runs", "build", "dist")
                or entry.name.endswith(".egg-info")):
            continue
        (work / entry.name).symlink_to(entry)
    return work


def copy_files(source: Path, target: Path) -> None:
    """What a block left in its directory (not the checkout's symlinks)."""
    for entry in source.iterdir():
        if entry.is_symlink():
            continue
        if entry.is_dir():
            shutil.copytree(entry, target / entry.name, symlinks=True, dirs_exist_ok=True)
        else:
            shutil.copy2(entry, target / entry.name)


def run_block(block: Block, tmp_root: Path) -> Ran:
    if block.name in RAN:
        return RAN[block.name]
    parent = tmp_root / re.sub(r"\W", "_", block.name)
    parent.mkdir(parents=True)
    work = checkout_like(parent)
    for name in block.after:
        before = run_block(BY_ID[name], tmp_root)
        assert before.returncode == 0, f"{block.name} starts after {BY_ID[name].name}, which failed"
        copy_files(before.directory, work)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", runnable_script(block)], cwd=work, env=env,
                          capture_output=True, text=True,
                          timeout=LONG_TIMEOUT_S if block.long else DEFAULT_TIMEOUT_S)
    RAN[block.name] = Ran(work, done.stdout, done.stderr, done.returncode)
    return RAN[block.name]


@pytest.fixture(scope="session")
def docs_tmp(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("docs-commands")


@pytest.mark.parametrize("block", [pytest.param(b, id=b.name, marks=marks(b)) for b in RUN_BLOCKS])
def test_the_command_block_runs_as_written(block, docs_tmp):
    if reads_shared_data(block) and not SHARED_DATA.exists():
        pytest.skip(f"benchmark data not found at {SHARED_DATA} (set CODEA1_SHARED_DATA)")
    modules, commands = all_needs(block)
    for module in modules:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (the extra that brings it: README.md, 'What each flow installs')")
    for command in commands:
        if shutil.which(command) is None:
            pytest.skip(f"{command} is not on PATH")
    ran = run_block(block, docs_tmp)
    assert ran.returncode == 0, (f"{block.name} exited {ran.returncode}:\n{runnable_script(block)}\n"
                                 f"stdout:\n{ran.stdout[-3000:]}\nstderr:\n{ran.stderr[-3000:]}")
    for out in OUT_DIR.findall(command_part(block)):
        assert (ran.directory / out).is_dir(), f"{block.name}: --out {out} was not written"
    printed = [line.rstrip() for line in ran.stdout.splitlines()]
    missing = [line for line in block.output if line not in printed]
    assert not missing, f"{block.name}: the page shows lines its output lacks: {missing}\nstdout:\n{ran.stdout}"
