"""docs/architecture.md's "paper → code" table names functions and tests; this test fails when one
of them is renamed or removed, so the page cannot rot. Names are found with ``ast`` (nothing is
imported: the decoders and the trainer pull in torch)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "toolformer_kit"
DOC = ROOT / "docs" / "architecture.md"
SECTION = "## The paper → code"


def table_rows(markdown: str) -> list[list[str]]:
    """The cells of the table under :data:`SECTION` (``\\|`` inside a cell is no column break).

    >>> table_rows("## The paper → code\\n\\n| a | b |\\n|---|---|\\n| x \\\\| y | `z` |\\n\\n## Next\\n| q |")
    [['x \\\\| y', '`z`']]
    """
    body = markdown.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            for line in body.splitlines() if line.startswith("|")]
    return rows[2:]  # past the header and its rule


def names(cell: str) -> list[str]:
    """The backticked names in a cell.

    >>> names("`a.b` and `tests/x.py::test_y`")
    ['a.b', 'tests/x.py::test_y']
    """
    return re.findall(r"`([^`]+)`", cell)


def _members(nodes) -> dict[str, ast.AST]:
    """Functions, classes and assigned names defined directly in a module or class body."""
    out = {}
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.Assign):
            out |= {t.id: node for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
    return out


def _module_file(parts: list[str]) -> Path | None:
    for candidate in (PKG.joinpath(*parts).with_suffix(".py"), PKG.joinpath(*parts) / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def defined(dotted: str) -> bool:
    """Whether ``module.name`` (or ``module.Class.member``) exists under ``toolformer_kit/``.

    >>> defined("annotate.filter.weights"), defined("decode.config.DecodeConfig.k"), defined("annotate.filter.nope")
    (True, True, False)
    """
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        path = _module_file(parts[:cut])
        if path is None:
            continue
        scope = _members(ast.parse(path.read_text(encoding="utf-8")).body)
        for attr in parts[cut:]:
            node = scope.get(attr)
            if node is None:
                return False
            scope = _members(node.body) if isinstance(node, ast.ClassDef) else {}
        return True
    return False


def has_test(ref: str) -> bool:
    """Whether ``tests/file.py::test_name`` is a test function of that file."""
    file, _, name = ref.partition("::")
    path = ROOT / file
    return path.is_file() and name in _members(ast.parse(path.read_text(encoding="utf-8")).body)


ROWS = table_rows(DOC.read_text(encoding="utf-8"))


def test_the_table_is_there_and_every_row_names_code_and_a_test():
    assert len(ROWS) >= 20
    for row in ROWS:
        assert len(row) == 4, row
        assert names(row[2]) and names(row[3]), f"row {row[0]!r} names no code or no test"


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_every_function_and_test_named_exists(row):
    missing = [n for n in names(row[2]) if not defined(n)]
    missing += [t for t in names(row[3]) if not has_test(t)]
    assert not missing, f"docs/architecture.md, row {row[0]!r}: no longer exists: {', '.join(missing)}"


def test_a_renamed_function_or_test_is_caught():
    assert not defined("annotate.filter.weights_renamed") and not defined("nowhere.weights")
    assert not has_test("tests/annotate/test_filter.py::test_renamed")
    assert has_test("tests/annotate/test_filter.py::test_weights_are_the_papers")
