"""No test asserts on a clock.  A clean-clone test run beside two other jobs failed a
growth check (0.254 s against 8 x 0.029 s): on a busy machine any time bound fails now
and then.  Speed and growth are measured in benchmarks/ (BENCHMARKS.md); a test asserts
behaviour (what was read, refused, written, counted).

The check parses every test file: a value is timed when it comes from a clock call
(``time.perf_counter``, ``time.monotonic``, ``time.time``, ``time.process_time`` and their
``_ns`` forms), from a name holding one, from a list a timed value was appended to, or
from a function returning one; an ``assert`` that reads a timed value fails the check.
Waiting with a deadline (a loop that polls until something happens) is not an assert."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"perf_counter", "monotonic", "time", "process_time", "thread_time"}
CLOCKS |= {f"{c}_ns" for c in CLOCKS}


def _is_clock(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Attribute):
        return f.attr in CLOCKS and isinstance(f.value, ast.Name) and f.value.id == "time"
    return isinstance(f, ast.Name) and f.id in CLOCKS - {"time"}


def _reads(node: ast.AST, timed: set[str], timed_funcs: set[str]) -> bool:
    for sub in ast.walk(node):
        if _is_clock(sub):
            return True
        if isinstance(sub, ast.Name) and sub.id in timed:
            return True
        if isinstance(sub, ast.Attribute) and f".{sub.attr}" in timed:  # self.x set, setup.x read
            return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in timed_funcs:
            return True
    return False


def _targets(node: ast.AST) -> list[str]:
    """The names an assignment target binds (``obj.x`` as the attribute ``.x`` of any object,
    ``rows[i]`` as ``rows``)."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return [n for e in node.elts for n in _targets(e)]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    if isinstance(node, ast.Subscript):
        return _targets(node.value)
    if isinstance(node, ast.Attribute):
        return [f".{node.attr}"]
    return [node.id] if isinstance(node, ast.Name) else []


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of ``scope`` outside the functions defined in it (their own scopes)."""
    out, todo = [], list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, _SCOPES):
            todo.extend(ast.iter_child_nodes(node))
    return out


def _scopes(scope: ast.AST, parents: tuple[ast.AST, ...] = ()) -> list[tuple[ast.AST, tuple[ast.AST, ...]]]:
    """Every scope (the module, each function) with the scopes enclosing it."""
    found = [(scope, parents)]
    for node in _own_nodes(scope):
        if isinstance(node, _SCOPES):
            found += _scopes(node, (*parents, scope))
    return found


def timed_asserts(source: str, filename: str = "<test>") -> list[str]:
    """``file:line`` of every assert in ``source`` that reads a timed value."""
    tree = ast.parse(source, filename)
    scopes = _scopes(tree)
    local: dict[int, set[str]] = {id(s): set() for s, _ in scopes}
    shared: set[str] = set()  # attributes (".x") and, as names, the functions returning a timed value
    timed_funcs: set[str] = set()

    def names(scope: ast.AST, parents: tuple[ast.AST, ...]) -> set[str]:
        return local[id(scope)].union(shared, *(local[id(p)] for p in parents))

    changed = True
    while changed:  # propagate through assignments, loops, appends and returns until nothing changes
        changed = False
        for scope, parents in scopes:
            timed = names(scope, parents)
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and scope.name not in timed_funcs \
                    and any(isinstance(r, ast.Return) and r.value is not None and _reads(r.value, timed, timed_funcs)
                            for r in _own_nodes(scope)):
                timed_funcs.add(scope.name)
                changed = True
            for node in _own_nodes(scope):
                found: list[str] = []
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None \
                        and _reads(node.value, timed, timed_funcs):
                    found = [n for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                             for n in _targets(t)]
                elif isinstance(node, (ast.For, ast.comprehension)) and _reads(node.iter, timed, timed_funcs):
                    found = _targets(node.target)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr in {"append", "extend", "add"} \
                        and any(_reads(a, timed, timed_funcs) for a in node.args):
                    found = _targets(node.func.value)
                for name in found:
                    where = shared if name.startswith(".") else local[id(scope)]
                    if name not in where:
                        where.add(name)
                        changed = True
    return sorted((f"{filename}:{node.lineno}" for scope, parents in scopes for node in _own_nodes(scope)
                   if isinstance(node, ast.Assert) and _reads(node, names(scope, parents), timed_funcs)),
                  key=lambda hit: int(hit.rsplit(":", 1)[1]))


def test_the_check_finds_a_timed_assert_and_passes_a_behaviour_one() -> None:
    planted = '''
import time
def best(n):
    times = []
    for _ in range(3):
        start = time.perf_counter()
        work(n)
        times.append(time.perf_counter() - start)
    return min(times)
def test_growth():
    small, large = best(250), best(1000)
    assert large < 8 * small
def test_at_once():
    start = time.monotonic()
    refuse()
    assert time.monotonic() - start < 5
def test_behaviour():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not done():
        pass
    assert done() and len(rows) == 3
class Setup:
    def __init__(self):
        start = time.perf_counter()
        self.export_s = time.perf_counter() - start
        self.folder = "x"
def test_attribute(setup):
    assert setup.folder == "x" and setup.export_s < 5
'''
    assert timed_asserts(planted) == ["<test>:12", "<test>:16", "<test>:28"]


def test_no_test_asserts_on_a_clock() -> None:
    files = sorted(TESTS.rglob("*.py"))
    assert len(files) > 100  # the listing worked
    found = [hit for f in files if f.name != Path(__file__).name
             for hit in timed_asserts(f.read_text(encoding="utf-8"), str(f.relative_to(TESTS.parent)))]
    assert not found, f"asserts on a clock (measure speed in benchmarks/ instead): {found}"
