"""The shape the trainers and flows keep: no function past 80 lines in trainers/
or harness/flows/, and no run of six or more lines repeated between two modules of
trainers/ (the same algorithm lives in one place: trainers/method/)."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

LONGEST = 80
REPEAT = 6


def modules(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def function_lengths(paths: list[Path], root: Path = ROOT) -> list[tuple[int, str]]:
    """(lines, where) of every function and method, longest first."""
    out = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((node.end_lineno - node.lineno + 1, f"{path.relative_to(root)}:{node.lineno} {node.name}"))
    return sorted(out, reverse=True)


def code_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, stripped text) of the module's code: blank lines, comments, docstrings
    and import statements left out (two modules may well import the same names)."""
    tree = ast.parse(path.read_text())
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            skip |= set(range(node.lineno, node.end_lineno + 1))
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            skip |= set(range(body[0].lineno, body[0].end_lineno + 1))
    out = []
    for number, text in enumerate(path.read_text().splitlines(), 1):
        text = text.strip()
        if text and not text.startswith("#") and number not in skip:
            out.append((number, text))
    return out


def repeated_runs(paths: list[Path], length: int = REPEAT, root: Path = ROOT) -> list[str]:
    """Each run of ``length`` code lines that two different modules both have."""
    first_seen: dict[tuple[str, ...], str] = {}
    found = []
    for path in paths:
        lines = code_lines(path)
        for i in range(len(lines) - length + 1):
            window = tuple(text for _, text in lines[i:i + length])
            where = f"{path.relative_to(root)}:{lines[i][0]}"
            seen = first_seen.setdefault(window, where)
            if seen.split(":")[0] != where.split(":")[0]:
                found.append(f"{where} repeats {seen}")
    return found


def test_no_function_is_longer_than_80_lines_in_trainers_and_flows():
    lengths = function_lengths(modules("trainers", "harness/flows"))
    print("longest:", *(f"{n:4d}  {where}" for n, where in lengths[:8]), sep="\n")
    assert [f"{n} lines: {where}" for n, where in lengths if n > LONGEST] == []


def test_no_six_lines_are_repeated_between_the_trainers_modules():
    assert repeated_runs(modules("trainers")) == []


def test_the_checks_catch_what_they_look_for(tmp_path):
    body = "".join(f"    total += {i}\n" for i in range(LONGEST))
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(f"def long():\n    total = 0\n{body}    return total\n")
    b.write_text("import os\n\n\ndef other():\n    total = 0\n" + "".join(body.splitlines(True)[3:9]) + "    return 1\n")
    assert function_lengths([a, b], tmp_path)[0] == (LONGEST + 3, "a.py:1 long")
    assert repeated_runs([a, b], root=tmp_path) == ["b.py:6 repeats a.py:6"]  # imports and the def aside
    assert repeated_runs([a, b], REPEAT + 1, tmp_path) == []
