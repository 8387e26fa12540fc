"""The architecture's import contracts, checked on the source tree with ``ast``.

1. The core (``codea1.harness``) imports nothing from ``codea1.plugins``, ``codea1.benchmarks``,
   ``codea1.trainers`` or ``codea1.reports``.
2. No module imports a plugin module (one that defines a ``@hookimpl``): plugins are loaded by
   the plugin manager, by name. Shared helpers live in the core or in a non-plugin module of
   the same folder (``benchmarks/evalplus_common.py``), and only that folder's modules use it.
3. Heavy libraries are imported inside the function that needs them, never when a module is
   imported (``if TYPE_CHECKING:`` blocks aside). A module that subclasses a heavy library's
   classes (``HEAVY_MODULES``: the openrlhf backend's Ray stack) imports it at the top and
   counts as heavy itself: it is imported only inside the function that needs it.
4. The modules that run inside the sandbox (and travel to Sandbox Fusion as source) import
   the standard library and each other only.
5. No import cycle in the core: following the imports that run when a module is imported, no
   ``codea1.harness`` module comes back to itself. An import inside a function runs later and
   may close a loop; importing a submodule runs its packages' ``__init__`` first, so it counts
   as importing those too.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import tomllib

HEAVY = ("torch", "transformers", "tokenizers", "vllm", "ray", "openrlhf", "deepspeed", "cosmic_ray", "coverage",
         "evalplus", "bigcodebench", "matplotlib", "pandas", "numpy", "openai", "sandbox_fusion",
         "tensorboard", "wandb")
HEAVY_MODULES = ("codea1.trainers.backends.openrlhf_stack",)
CORE = "codea1.harness"
OUTSIDE_CORE = ("codea1.plugins", "codea1.benchmarks", "codea1.trainers", "codea1.reports")
SANDBOX_SIDE = ("codea1.harness.verdicts.plaindata", "codea1.harness.sandbox.child", "codea1.harness.sandbox.confine",
                "codea1.harness.sandbox.zygote", "codea1.harness.sandbox.protocol", "codea1.harness.sandbox.timing",
                "codea1.harness.sandbox.ground", "codea1.harness.sandbox.settle", "codea1.harness.sandbox.observers",
                "codea1.harness.sandbox.warmup", "codea1.harness.sandbox.privileges")
# The child's report hooks (script_reports) and how it names a script's tests (script_tests):
# their module-level imports are the standard library, plaindata and each other (the parent-side
# functions import the judge and the syntax module inside themselves only).
SANDBOX_MAY_IMPORT = ("codea1", CORE, "codea1.harness.sandbox", "codea1.harness.verdicts", "__future__",
                      "codea1.harness.verdicts.script_reports", "codea1.harness.verdicts.script_tests")


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    is_package: bool

    @property
    def folder(self) -> str:
        """The package a plugin's shared helpers must share with it."""
        return self.name if self.is_package else self.name.rpartition(".")[0]

    def is_plugin(self) -> bool:
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for d in node.decorator_list:
                    if (isinstance(d, ast.Name) and d.id == "hookimpl") or \
                            (isinstance(d, ast.Attribute) and d.attr == "hookimpl"):
                        return True
        return False


def load_modules(root: Path) -> dict[str, Module]:
    """Every module of the installed namespace, by its installed name (pyproject's mapping)."""
    mapping = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    modules = {}
    for package, folder in mapping.items():
        base = root / folder
        for path in base.rglob("*.py"):
            parts = [p for p in path.relative_to(base).with_suffix("").parts if p != "__init__"]
            name = ".".join([package, *parts])
            modules[name] = Module(name, path, ast.parse(path.read_text()), path.name == "__init__.py")
    return modules


def imports(module: Module, modules: dict[str, Module]) -> list[tuple[int, str, bool]]:
    """(line, imported module, at import time?) for every import statement."""
    found = []

    def visit(node: ast.AST, at_import: bool, type_checking: bool = False) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, False, type_checking)
                continue
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(child, at_import, True)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append((child.lineno, alias.name, at_import and not type_checking))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    package = module.folder.split(".")
                    package = package[:len(package) - child.level + 1]
                    base = ".".join(package + ([base] if base else []))
                for alias in child.names:
                    full = f"{base}.{alias.name}"
                    found.append((child.lineno, full if full in modules else base, at_import and not type_checking))
            visit(child, at_import, type_checking)

    visit(module.tree, True)
    return found


def _related(folder: str, other: str) -> bool:
    """The same folder, or one inside the other."""
    return folder == other or folder.startswith(other + ".") or other.startswith(folder + ".")


def violations(root: Path) -> list[str]:
    modules = load_modules(root)
    plugins = {name for name, m in modules.items() if m.is_plugin()}
    out = []
    for name, module in sorted(modules.items()):
        where = module.path.relative_to(root)
        for line, target, at_import in imports(module, modules):
            top = target.split(".")[0]
            if name.startswith(CORE) and target.startswith(OUTSIDE_CORE):
                out.append(f"{where}:{line}: the core imports {target}")
            if target in plugins and target != name:
                out.append(f"{where}:{line}: imports the plugin module {target}")
            elif target in modules and not name.startswith(CORE) and not target.startswith((CORE, "codea1.api")) \
                    and target != "codea1" and not _related(module.folder, modules[target].folder):
                out.append(f"{where}:{line}: imports {target}, a helper of another folder")
            if at_import and (top in HEAVY or target in HEAVY_MODULES) and name not in HEAVY_MODULES:
                out.append(f"{where}:{line}: imports {target} when the module is imported (import it where it is used)")
            if name in SANDBOX_SIDE and top not in sys.stdlib_module_names and target not in SANDBOX_SIDE \
                    and target not in SANDBOX_MAY_IMPORT:
                out.append(f"{where}:{line}: sandbox-side module imports {target} (stdlib only)")
    return out + cycle_violations(root, modules)


def core_imports(modules: dict[str, Module]) -> dict[str, dict[str, int]]:
    """For each core module, the core modules its import runs, with the line that imports each."""
    graph = {}
    for name, module in modules.items():
        if not _related(name, CORE):
            continue
        graph[name] = edges = {}
        for line, target, at_import in imports(module, modules):
            if not at_import or target not in modules or not _related(target, CORE):
                continue
            # The target and the packages above it (their __init__ runs first), short of the
            # importer's own packages: those ran before the importer did.
            while target != name and not name.startswith(target + "."):
                edges.setdefault(target, line)
                target = target.rpartition(".")[0]
    return graph


def import_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Every cycle once, as a path from its first module (in sorted order) back to it."""
    cycles = []
    for start in sorted(graph):
        # Modules after start that lead back to it: a cycle through an earlier module was
        # found from that one, and a module that cannot reach start closes no cycle.
        among = {n for n in graph if n > start}
        back, todo = set(), [start]
        while todo:
            node = todo.pop()
            for n in among - back:
                if node in graph[n]:
                    back.add(n)
                    todo.append(n)

        def walk(path: list[str]) -> None:
            for nxt in sorted(graph[path[-1]]):
                if nxt == start:
                    cycles.append([*path, start])
                elif nxt in back and nxt not in path:
                    walk([*path, nxt])

        walk([start])
    return cycles


def cycle_violations(root: Path, modules: dict[str, Module]) -> list[str]:
    graph = core_imports(modules)
    return [f"{modules[c[0]].path.relative_to(root)}:{graph[c[0]][c[1]]}: import cycle {' -> '.join(c)}"
            for c in import_cycles(graph)]
