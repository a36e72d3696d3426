"""Project layout rules: the entry file only routes, library files and functions stay small,
and each library package names its own concept."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("common", "dcem", "runtime", "clinical", "dcem_clinical", "sag", "studio")
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 50  # body lines, docstring excluded


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def library_files() -> list[Path]:
    return [p for pkg in LIBRARY for p in (ROOT / pkg).rglob("*.py")]


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    first = node.body[0]
    has_doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
        and isinstance(first.value.value, str)
    start = node.body[1].lineno if has_doc and len(node.body) > 1 else first.lineno
    return (node.end_lineno or start) - start + 1


def test_library_files_stay_small() -> None:
    big = {str(p.relative_to(ROOT)): n for p in library_files() + list(ROOT.glob("*.py"))
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES}
    assert big == {}


def test_library_functions_stay_small() -> None:
    long = {}
    for path in library_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and body_lines(node) > MAX_FUNCTION_LINES:
                long[f"{path.relative_to(ROOT)}:{node.name}"] = body_lines(node)
    assert long == {}


def test_app_entry_only_routes() -> None:
    names = imported_modules(ROOT / "app.py")
    assert names == {"streamlit", "studio"}  # routing, and the store held per page run (studio.store_scope)


def test_every_library_package_says_what_it_owns() -> None:
    for pkg in LIBRARY:
        doc = ast.get_docstring(ast.parse((ROOT / pkg / "__init__.py").read_text(encoding="utf-8")))
        assert doc and len(doc) > 40, pkg


def test_sag_holds_no_dcem_clinical_code() -> None:
    modules = {p.stem for p in (ROOT / "sag").rglob("*.py")}
    assert not modules & {"clinical", "clinical_run", "clinical_data", "llm_panel", "llm_agent", "call_log",
                          "ddxplus", "medqa_tri", "llama_backend", "models"}
    for path in (ROOT / "sag").rglob("*.py"):
        assert not imported_modules(path) & {"dcem_clinical"}, path


PAGE_FORBIDDEN = ("common", "dcem", "sag", "dcem_clinical", "clinical", "runtime", "training")


def library_imports(source: str) -> set[str]:
    """The library packages a page's source imports (at any depth in the file)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names & set(PAGE_FORBIDDEN)


def test_pages_import_only_studio() -> None:
    """Pages import the libraries through studio (its page helpers and studio.views)."""
    found = {p.name: sorted(n) for p in (ROOT / "pages").glob("*.py")
             if (n := library_imports(p.read_text(encoding="utf-8")))}
    assert found == {}


def test_a_planted_library_import_in_a_page_is_caught() -> None:
    page = (ROOT / "pages" / "overview.py").read_text(encoding="utf-8")
    for package in PAGE_FORBIDDEN:
        for line in (f"from {package}.x import y\n", f"import {package}.x\n",
                     f"def f():\n    from {package} import y\n"):
            assert library_imports(page + line) == {package}, line
