"""Mutants of a reference solution, made with cosmic-ray's operators used as a library.

The operator set is cosmic-ray's default, as its ``init`` builds it (and as the
UnLeakedTestBench evaluation uses it): every installed operator that takes no arguments,
each applied at every position it matches, one mutation per mutant. Mutants whose source
text equals another's, or the original's, are counted once (cosmic-ray would run them all).
Only parsing happens here; mutants run through an executor like any other program.

cosmic-ray is imported when mutants are first asked for (``pip install 'codea1[mutation]'``).
"""

from __future__ import annotations

import difflib
import importlib.util
from dataclasses import dataclass

from codea1.harness.errors import Codea1Error


class MutationUnavailable(Codea1Error):
    pass


@dataclass
class Mutant:
    mutant_id: str  # "operator#occurrence", as cosmic-ray names a work item
    operator: str
    occurrence: int
    code: str
    duplicates: int = 0  # other operator positions that produced the same source text

    def diff(self, original: str, name: str = "solution.py") -> str:
        return "".join(difflib.unified_diff(original.splitlines(True), self.code.splitlines(True),
                                            f"a/{name}", f"b/{name}", n=1))


def require(coverage: bool = False) -> None:
    """Fail clearly, before any work, when cosmic-ray (or, with ``coverage``, coverage.py) is
    missing."""
    try:
        import cosmic_ray.plugins  # noqa: F401
    except ImportError as exc:
        raise MutationUnavailable("mutation testing needs cosmic-ray: pip install 'codea1[mutation]'") from exc
    if coverage and importlib.util.find_spec("coverage") is None:
        raise MutationUnavailable("the coverage stage needs coverage.py: pip install 'codea1[mutation]' "
                                  "(or pass --no-coverage)")


def _operators():
    require()
    import cosmic_ray.plugins

    for name in cosmic_ray.plugins.operator_names():
        cls = cosmic_ray.plugins.get_operator(name)
        if not cls.arguments():  # operators with arguments run only when configured, as in init
            yield name, cls()


def operator_names() -> list[str]:
    return [name for name, _ in _operators()]


def generate_mutants(source: str) -> tuple[list[Mutant], int]:
    """(unique mutants in cosmic-ray's order, number of mutation positions before dedupe)."""
    require()  # the install hint, not a bare ModuleNotFoundError (the SFT trainer's mutants come here)
    from cosmic_ray.ast import ast_nodes, get_ast
    from cosmic_ray.mutating import mutate_code

    module = get_ast(source)
    nodes = list(ast_nodes(module))
    by_code: dict[str, Mutant] = {}
    positions = 0
    for name, operator in _operators():
        count = sum(1 for node in nodes for _ in operator.mutation_positions(node))
        for occurrence in range(count):
            code = mutate_code(source, operator, occurrence)
            if code is None:
                continue
            positions += 1
            if code == source:
                continue
            if code in by_code:
                by_code[code].duplicates += 1
                continue
            by_code[code] = Mutant(f"{name}#{occurrence}", name, occurrence, code)
    return list(by_code.values()), positions
