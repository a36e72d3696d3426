"""Models load through runtime.factory only, and a backend picks its own turn runner:
no module outside runtime/ (tests/ and benchmarks/ aside) constructs ``LlamaCppBackend``
or tells backends apart with ``isinstance(..., LlamaCppBackend)``."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = ("runtime", "tests", "benchmarks")
CLASS = "LlamaCppBackend"


def _names_of_the_class(tree: ast.AST) -> set[str]:
    """``LlamaCppBackend`` and every name it is imported as."""
    names = {CLASS}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names.update(a.asname for a in node.names if a.name == CLASS and a.asname)
    return names


def _is_class(node: ast.AST, names: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Attribute):
        return node.attr == CLASS
    if isinstance(node, ast.Tuple):
        return any(_is_class(e, names) for e in node.elts)
    return False


def offences(source: str) -> list[str]:
    """``line: what`` for each construction of the class and each isinstance test on it."""
    tree = ast.parse(source)
    names = _names_of_the_class(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if _is_class(node.func, names):
            found.append((node.lineno, f"constructs {CLASS}"))
        elif isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass") \
                and len(node.args) == 2 and _is_class(node.args[1], names):
            found.append((node.lineno, f"picks by class with {node.func.id}"))
    return [f"{line}: {what}" for line, what in sorted(found)]


def scanned_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py")
                  if (top := p.relative_to(ROOT).parts[0]) not in ALLOWED and not top.startswith("."))


def test_the_scan_finds_constructions_and_class_tests_however_spelled() -> None:
    bad = '''
from runtime.llama_backend import LlamaCppBackend as Llama
import runtime.llama_backend as lb
a = Llama("m.gguf", n_ctx=512)
b = lb.LlamaCppBackend("m.gguf")
if isinstance(a, (int, Llama)): pass
if isinstance(b, lb.LlamaCppBackend): pass
'''
    assert offences(bad) == ["4: constructs LlamaCppBackend", "5: constructs LlamaCppBackend",
                             "6: picks by class with isinstance", "7: picks by class with isinstance"]
    good = '''
"""LlamaCppBackend(path) is made by runtime.factory."""
from runtime.factory import load_gguf
from runtime.llama_backend import LlamaCppBackend
backend: LlamaCppBackend = load_gguf("m.gguf", kv_cache_mb=0)
runner = backend.turn_runner(batched=True)
'''
    assert offences(good) == []


def test_no_module_outside_runtime_loads_a_model_or_picks_a_runner_by_class() -> None:
    files = scanned_files()
    assert {"sag", "dcem_clinical", "studio", "app.py"} <= {p.relative_to(ROOT).parts[0] for p in files}
    found = {f"{p.relative_to(ROOT)}:{o}" for p in files for o in offences(p.read_text(encoding="utf-8"))}
    assert found == set()
