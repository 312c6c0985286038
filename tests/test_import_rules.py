"""The layering of docs/architecture.md, read from the source with ``ast`` (every import counts,
the lazy ones inside functions too, since they run sooner or later):

* the library never imports the command line (``commands``), only ``commands`` and the
  ``toolformer_kit.cli`` shim do;
* each package imports only the layers below it (:data:`MAY_IMPORT`);
* no module imports itself back through others (no cycles), so each can be read, tested and
  moved on its own.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "toolformer_kit"
VOCABULARY = {"calls", "config", "registry", "blocks", "files", "plots"}
# unit → the units it may import besides itself and the vocabulary (a unit is a top-level module
# or package of toolformer_kit). Lower layers first; see docs/architecture.md.
MAY_IMPORT = {
    "calls": set(), "config": set(), "registry": set(), "blocks": set(), "files": set(), "plots": set(),
    "lm": set(),
    "tools": {"lm"},
    "decode": {"lm", "tools"},
    "annotate": {"lm", "tools"},
    "train": {"lm"},
    "eval": {"lm", "tools", "decode"},
    "inspector": {"annotate", "tools"},
    # The pipeline is the one runner of stages; an experiment (evidence) is a pipeline configuration
    # plus an evidence report, built on it; never the other way round (issue 30).
    "pipeline": {"lm", "tools", "decode", "annotate", "train", "eval"},
    # What the evidence measures reads run outputs; it runs nothing (issue 45).
    "measures": {"lm", "tools", "eval"},
    "corpora": {"lm", "tools", "annotate", "eval", "measures"},
    "campaign": {"lm", "tools", "annotate", "eval", "measures", "corpora"},
    # An experiment fine-tunes on the campaigns' published datasets (several: their merged C*).
    "experiment": {"lm", "tools", "decode", "annotate", "train", "eval", "pipeline", "measures", "corpora",
                   "campaign"},
    "study": {"lm", "tools", "decode", "annotate", "train", "eval", "pipeline", "measures", "corpora",
              "campaign", "experiment"},
    "commands": {"lm", "tools", "decode", "annotate", "train", "eval", "inspector", "pipeline", "measures",
                 "corpora", "campaign", "experiment", "study"},
    "cli": {"commands"},
    "__init__": set(),
}


def module_name(path: Path) -> str:
    parts = ["toolformer_kit", *path.relative_to(PKG).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The toolformer_kit modules ``name`` imports (``from P import m`` counts as P.m when m is a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("toolformer_kit")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("toolformer_kit"):
                continue
            subs = {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known}
            out |= subs if subs and len(subs) == len(node.names) else subs | {target}
    return out - {name}


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {m: imports(m, p, set(mods)) for m, p in mods.items()}


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_the_graph_is_read():
    g = graph()
    assert "toolformer_kit.eval.run" in g["toolformer_kit.pipeline.stages"]
    assert "toolformer_kit.pipeline.stages" in g["toolformer_kit.experiment.run"]
    assert "toolformer_kit.lm.base" in g["toolformer_kit.lm.hf"]


def test_the_library_never_imports_the_command_line():
    bad = sorted(f"{m} imports {t}" for m, ts in graph().items() for t in ts
                 if unit(t) == "commands" and unit(m) not in ("commands", "cli"))
    assert not bad, "\n".join(bad)


def test_each_package_imports_only_the_layers_below_it():
    bad = []
    for m, targets in graph().items():
        allowed = MAY_IMPORT[unit(m)] | VOCABULARY | {unit(m), "__init__"}
        bad += [f"{m} imports {t}" for t in sorted(targets) if unit(t) not in allowed]
    assert not bad, "\n".join(bad)


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_no_module_imports_itself_back():
    assert cycles(graph()) == []


@pytest.mark.parametrize("g, expected", [({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [["a", "b"]]),
                                         ({"a": {"b"}, "b": set()}, [])])
def test_cycles_are_found(g, expected):
    assert cycles(g) == expected
