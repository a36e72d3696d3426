"""Project layout rules: dependency direction and file size."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_dcem_never_imports_sag_streamlit_or_llm_code() -> None:
    forbidden = {"sag", "streamlit", "llama_cpp", "openai", "huggingface_hub", "pages"}
    offenders = {str(p.relative_to(ROOT)): imported_modules(p) & forbidden
                 for p in (ROOT / "dcem").rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_library_files_stay_small() -> None:
    big = {str(p.relative_to(ROOT)): n for p in list((ROOT / "dcem").rglob("*.py")) + list(ROOT.glob("*.py"))
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert big == {}


def test_app_entry_only_routes() -> None:
    names = imported_modules(ROOT / "app.py")
    assert names == {"streamlit"}


def test_sag_never_imports_the_ui() -> None:
    forbidden = {"streamlit", "pages", "studio"}
    offenders = {str(p.relative_to(ROOT)): imported_modules(p) & forbidden
                 for p in (ROOT / "sag").rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}
