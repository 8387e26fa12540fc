"""Turning model responses into programs and test suites.

``extract_code(response, entry_point)``: the program in the first python code block (a
later block when only that one defines the function; the whole text when there is no
fence), cleaned by evalplus' sanitizer when it is installed (it keeps the function, what it
needs and the imports, and drops prose, prints, asserts and ``__main__`` blocks), with a
report of what was done.

``extract_tests(response, entry_point, k)``: the assert statements of the first python code
block that holds any, in order, parsed with ``ast``. Exactly K, as the paper's reward reads
them: the first K asserts are the suite (an unparseable or duplicate one keeps its place and
counts as invalid), later ones are cut, a shortfall is reported. Every line that does not
become a test gets a structured reason.
"""

from __future__ import annotations

import ast
import re
from dataclasses import asdict, dataclass, field

from codea1.harness.verdicts.asserts import AssertParseError, parse_assert
from codea1.harness.verdicts.syntax import parse_untrusted, quiet_parsing

_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+-]*)[^\n]*\n(.*?)^[ \t]*```", re.S | re.M)
_UNCLOSED = re.compile(r"^[ \t]*```[ \t]*([\w+-]*)[^\n]*\n(.*)\Z", re.S | re.M)
_PYTHON_TAGS = {"", "python", "py", "python3", "pycon"}


@dataclass
class CodeBlock:
    language: str
    text: str
    position: int  # 1-based among the response's blocks


def code_blocks(response: str) -> list[CodeBlock]:
    """Fenced blocks in order; a last fence left open (the model ran out of tokens) counts
    as a block up to the end."""
    matches = list(_FENCE.finditer(response))
    blocks = [CodeBlock(m.group(1).lower(), m.group(2), i + 1) for i, m in enumerate(matches)]
    tail = response[matches[-1].end():] if matches else response
    m = _UNCLOSED.search(tail)
    if m:
        blocks.append(CodeBlock(m.group(1).lower(), m.group(2), len(blocks) + 1))
    return blocks


def _defines(code: str, name: str) -> bool:
    return re.search(rf"^\s*(async\s+)?def\s+{re.escape(name)}\s*\(", code, re.M) is not None


def _sanitize(code: str, entry_point: str | None) -> tuple[str, str]:
    try:
        from evalplus.sanitize import sanitize
    except ImportError:
        return code, "none"
    try:
        with quiet_parsing():  # it checks the syntax with ast.parse
            cleaned = sanitize(code, entry_point)
    except Exception:  # the sanitizer is a help, never a failure
        return code, "none (evalplus' sanitizer failed)"
    if not cleaned.strip():
        return code, "none (evalplus' sanitizer found nothing)"
    if entry_point and _defines(code, entry_point) and not _defines(cleaned, entry_point):
        # evalplus' sanitizer keeps plain function definitions only: a decorated one
        # (@functools.lru_cache) would go, and a right program would fail every test.
        return code, "none (evalplus' sanitizer dropped the entry point)"
    return cleaned, "evalplus"


@dataclass
class CodeExtraction:
    code: str
    source: str  # "block 1 of 2", "unfenced"
    sanitizer: str
    syntax_error: str | None
    defines_entry_point: bool
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def extract_code(response: str, entry_point: str | None = None, sanitize: bool = True) -> CodeExtraction:
    every = code_blocks(response)
    blocks = [b for b in every if b.language in _PYTHON_TAGS]
    notes = []
    if blocks:
        chosen = blocks[0]
        if entry_point and not _defines(chosen.text, entry_point):
            later = next((b for b in blocks[1:] if _defines(b.text, entry_point)), None)
            if later is not None:
                notes.append(f"block {chosen.position} does not define {entry_point}; took block {later.position}")
                chosen = later
        code = chosen.text
        source = f"block {chosen.position} of {len(every)}"
    else:
        code, source = response, "unfenced"
    sanitizer = "off"
    if sanitize:
        code, sanitizer = _sanitize(code, entry_point)
    code = code.strip("\n") + "\n" if code.strip() else ""
    try:
        parse_untrusted(code)
        error = None
    except SyntaxError as exc:
        error = f"line {exc.lineno}: {exc.msg}"
    return CodeExtraction(code, source, sanitizer, error, bool(entry_point) and _defines(code, entry_point), notes)


# -- tests -----------------------------------------------------------------------------------
@dataclass
class RejectedLine:
    line: int  # 1-based within the code that was read (0: a whole block)
    source: str
    reason: str


@dataclass
class TestsExtraction:
    tests: list[str]  # the suite: the first K assert statements, in order, as written
    requested: int  # K
    found: int  # assert statements in the response
    parsed: int  # of the suite, how many parse into a test of the function
    unique: int  # of those, how many are distinct
    missing: int  # K - len(tests) when the response had fewer
    source: str
    rejected: list[RejectedLine] = field(default_factory=list)
    usable: list[bool] = field(default_factory=list)  # per suite entry: parses, and is not a duplicate

    def to_json(self) -> dict:
        return asdict(self)


def _statements(code: str) -> list[tuple[int, str]]:
    """Top-level statements with their line; line by line when the block does not parse,
    so one broken assert does not lose the others."""
    try:
        tree = parse_untrusted(code)
        return [(node.lineno, ast.get_source_segment(code, node) or "") for node in tree.body]
    except SyntaxError:
        pass
    out = []
    lines = code.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        # A statement over several lines goes on while lines are indented or close a bracket.
        end, text = i, lines[i].strip()
        while (not _parses(text) and end + 1 < len(lines)
               and lines[end + 1][:1] in (" ", "\t", ")", "]", "}")):
            end += 1
            text += "\n" + lines[end]
        if _parses(text):
            out.append((i + 1, text))
            i = end + 1
        else:
            out.append((i + 1, lines[i].strip()))
            i += 1
    return out


def _parses(text: str) -> bool:
    try:
        parse_untrusted(text)
        return True
    except SyntaxError:
        return False


def _normal(test_source: str) -> str:
    """Two asserts that differ only in spacing or quotes are the same test."""
    try:
        return ast.dump(parse_untrusted(test_source.strip()))
    except SyntaxError:
        return test_source.strip()


def extract_tests(response: str, entry_point: str | None, k: int) -> TestsExtraction:
    every = code_blocks(response)
    blocks = [b for b in every if b.language in _PYTHON_TAGS]
    counts = [(len(re.findall(r"^\s*assert\b", b.text, re.M)), b) for b in blocks]
    rejected: list[RejectedLine] = []
    if any(n for n, _ in counts):
        # The prompt asks for ONE block of asserts: the block with the most (the first of
        # equals), so a solution block that ends in a sample assert is not taken for it.
        best = max(n for n, _ in counts)
        chosen = next(b for n, b in counts if n == best)
        code, source = chosen.text, f"block {chosen.position} of {len(every)}"
        for n, b in counts:
            if n and b is not chosen:
                rejected.append(RejectedLine(0, f"<block {b.position}>", f"{n} assert(s) in another block, not read"))
    else:
        code, source = response, "unfenced"
    asserts: list[tuple[int, str]] = []
    for lineno, stmt in _statements(code):
        head = stmt.lstrip()
        if not head or head.startswith("#"):
            continue
        if re.match(r"assert\b", head):
            asserts.append((lineno, stmt.strip()))
        elif not blocks:
            continue  # prose around unfenced asserts is not worth a reason per line
        else:
            kind = ("an import" if re.match(r"(import|from)\s", head) else
                    "a definition" if re.match(r"(async\s+def|def|class)\s", head) else "not an assert statement")
            rejected.append(RejectedLine(lineno, stmt, kind if kind.startswith("not") else f"{kind}, not a test"))
    suite = asserts[:k]
    for lineno, stmt in asserts[k:]:
        rejected.append(RejectedLine(lineno, stmt, f"beyond the {k} asserts requested"))
    seen: dict[str, int] = {}
    parsed = unique = 0
    usable = []
    for position, (lineno, stmt) in enumerate(suite):
        try:
            parse_assert(stmt, entry_point)
        except AssertParseError as exc:
            rejected.append(RejectedLine(lineno, stmt, exc.reason))
            usable.append(False)
            continue
        parsed += 1
        key = _normal(stmt)
        if key in seen:
            rejected.append(RejectedLine(lineno, stmt, f"duplicate of test {seen[key] + 1}"))
            usable.append(False)
            continue
        seen[key] = position
        unique += 1
        usable.append(True)
    rejected.sort(key=lambda r: r.line)
    return TestsExtraction(tests=[s for _, s in suite], requested=k, found=len(asserts), parsed=parsed, unique=unique,
                           missing=max(0, k - len(suite)), source=source, rejected=rejected, usable=usable)


def with_prompt_imports(prompt: str, code: str) -> str:
    """Models often answer with the function alone, without the imports the prompt made
    (``from typing import List``): those imports go in front."""
    if not code.strip():
        return code
    try:
        tree = parse_untrusted(prompt)
    except SyntaxError:
        return code
    imports = [ast.get_source_segment(prompt, n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    missing = [line for line in imports if line and line not in code]
    return "\n".join(missing) + "\n\n" + code if missing else code


def program_from_response(prompt: str, entry_point: str | None, text: str) -> str:
    """The program a code response amounts to: its code (``extract_code``) with the imports
    the prompt made put back."""
    return with_prompt_imports(prompt, extract_code(text, entry_point).code)
