"""The architecture's size and shape, measured the same way before and after a refactoring (issue 30).

Prints: modules, import edges (module to module, and package to package), layers (the documented
table in docs/architecture.md and the depth of the package graph), cycles, the largest module and
function, the largest package's share of the lines, the config dataclasses' fields (and, per
composite config, how many re-declare a stage config's field instead of taking it from there, and
how many take one under another name), the routes from flags or a file to a config and the
functions that map one config into another by hand, the ``_f`` field helpers, the places that
resolve τf, and the modules that no test imports (issue 45). Reads the source only (``ast``), so it runs in a second and imports nothing heavy.

    python benchmarks/arch_metrics.py [--json]
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "toolformer_kit"
STAGE_CONFIGS = ("AnnotateConfig", "TrainConfig", "EvalConfig", "DecodeConfig")
COMPOSITES = ("PipelineConfig", "ExperimentConfig", "StudyConfig", "CampaignConfig")


def _rules():
    """tests/test_import_rules.py, the one reader of the import graph (imported by path)."""
    spec = importlib.util.spec_from_file_location("import_rules", ROOT / "tests" / "test_import_rules.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _depth(g: dict[str, set[str]]) -> int:
    """Nodes on the longest path of an acyclic graph (self-edges ignored)."""
    memo: dict[str, int] = {}

    def d(v, seen=()):
        if v not in memo:
            nxt = [w for w in g.get(v, ()) if w != v and w not in seen]
            memo[v] = 1 + max((d(w, seen + (v,)) for w in nxt), default=0)
        return memo[v]

    return max(map(d, g), default=0)


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.end_lineno - node.lineno + 1


def _config_classes(trees: dict[str, ast.Module]) -> dict[str, dict]:
    """Every dataclass named ``*Config``: its own annotated fields, and which take their metadata
    from a stage config (``stage_field(...)``) rather than declaring it again."""
    out = {}
    for mod, tree in trees.items():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.ClassDef) and node.name.endswith("Config")):
                continue
            if not any("dataclass" in ast.unparse(d) for d in node.decorator_list):
                continue
            own, taken, renamed = [], [], []
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    value = ast.unparse(item.value) if item.value else ""
                    feeds = isinstance(item.value, ast.Call) and any(k.arg == "feeds" for k in item.value.keywords)
                    (taken if value.startswith("stage_field(") or feeds else own).append(item.target.id)
                    args = item.value.args if isinstance(item.value, ast.Call) else []
                    if value.startswith("stage_field(") and len(args) > 1 and isinstance(args[1], ast.Constant) \
                            and args[1].value != item.target.id:
                        renamed.append(f"{item.target.id}←{args[1].value}")
            bases = [ast.unparse(b) for b in node.bases]
            out[node.name] = {"module": mod, "own": own, "taken": taken, "renamed": renamed, "bases": bases}
    return out


def _all_fields(name: str, classes: dict[str, dict]) -> list[str]:
    c = classes[name]
    inherited = [f for b in c["bases"] if b in classes for f in _all_fields(b, classes)]
    return inherited + [f for f in c["own"] + c["taken"] if f not in inherited]


def measure() -> dict:
    rules = _rules()
    mods = rules.modules()
    g = rules.graph()
    units: dict[str, set[str]] = {}
    for m, ts in g.items():
        units.setdefault(rules.unit(m), set()).update(rules.unit(t) for t in ts)
    trees = {m: ast.parse(p.read_text(encoding="utf-8")) for m, p in mods.items()}
    lines = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in mods.items()}
    funcs = [(n, f"{m}.{name}") for m, t in trees.items() for name, n in _functions(t)]
    classes = _config_classes(trees)
    stage = {f for s in STAGE_CONFIGS if s in classes for f in _all_fields(s, classes)}
    composites = {}
    for c in COMPOSITES:
        if c in classes:
            fields = _all_fields(c, classes)
            redeclared = [f for f in classes[c]["own"] if f in stage]
            composites[c] = {"fields": len(fields), "re-declared from a stage config": f"{len(redeclared)} "
                             f"({', '.join(redeclared)})" if redeclared else 0,
                             "taken from a stage config": len(classes[c]["taken"]) + sum(
                                 len(_all_fields(b, classes)) for b in classes[c]["bases"] if b in classes),
                             "renamed from a stage config": len(classes[c]["renamed"]),
                             "dtype": "dtype" in fields, "call_cost": "call_cost" in fields}
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    doc_layers = sorted({int(x) for x in re.findall(r"^\| (\d+) ", doc, flags=re.M)})
    helpers = sum(1 for t in trees.values() for n in ast.walk(t) if isinstance(n, ast.FunctionDef) and n.name == "_f")
    tau_f = _tau_f_resolvers(trees)
    largest_mod = max(lines.items(), key=lambda kv: kv[1])
    per_unit: dict[str, int] = {}
    for m, n in lines.items():
        per_unit[rules.unit(m)] = per_unit.get(rules.unit(m), 0) + n
    top_unit = max(per_unit.items(), key=lambda kv: kv[1])
    routes, mappings = _config_builders(trees, set(classes))
    largest_fn = max(funcs)
    return {
        "modules": len(mods),
        "import edges (module → module)": sum(len(ts) for ts in g.values()),
        "import edges (package → package)": sum(len(ts - {u}) for u, ts in units.items()),
        "layers (docs table)": len(doc_layers),
        "layers (longest package chain)": _depth(units),
        "cycles (modules)": len(rules.cycles(g)),
        "cycles (packages)": len(rules.cycles({u: ts - {u} for u, ts in units.items()})),
        "largest module": f"{largest_mod[0]} ({largest_mod[1]} lines)",
        "largest function": f"{largest_fn[1]} ({largest_fn[0]} lines)",
        "largest package": f"{top_unit[0]} ({top_unit[1]} of {sum(lines.values())} lines, "
                           f"{100 * top_unit[1] / sum(lines.values()):.0f} %)",
        "config dataclasses": len(classes),
        "config fields (all *Config dataclasses)": sum(len(_all_fields(c, classes)) for c in classes),
        "config fields declared (written out)": sum(len(c["own"]) for c in classes.values()),
        "composite configs": composites,
        "_f field helpers": helpers,
        "τf resolvers (functions that fall back to a tool's paper τf)": tau_f,
        "routes from flags or a file to a config": routes,
        "config → config mappings written by hand (a field copied into a keyword)": mappings,
        "functions both runners define (pipeline.run, experiment.run)": _parallel(trees),
        "modules no test imports": _untested(set(mods)),
    }


RUNNERS = ("toolformer_kit.pipeline.run", "toolformer_kit.experiment.run")


def _parallel(trees: dict[str, ast.Module]) -> list[str]:
    """Top-level functions of the same name in both runners: a stage implemented twice (issue 45
    counted eight); what is left should be each runner's own mapping to a stage config."""
    names = [{n.name for n in trees[m].body if isinstance(n, ast.FunctionDef)} for m in RUNNERS if m in trees]
    return sorted(set.intersection(*names)) if len(names) == len(RUNNERS) else []


def _config_builders(trees: dict[str, ast.Module], configs: set[str]) -> tuple[list[str], list[str]]:
    """Functions returning a ``*Config``: a *route* when it puts one together from the flags (an
    ``argparse.Namespace``) or a settings file (it calls ``load_config_file`` itself) rather than
    handing its layers to ``config.build_config`` / ``config.layered``; a *mapping* when it takes
    another config and returns one."""
    routes, mappings = [], []
    for m, t in trees.items():
        for node in ast.walk(t):
            if not isinstance(node, ast.FunctionDef) or node.returns is None:
                continue
            ret = ast.unparse(node.returns)
            if not (ret in configs or ret in ("C", "type[C]") or ret.endswith("Config")):
                continue
            params = [ast.unparse(a.annotation) if a.annotation else a.arg for a in node.args.args]
            reads_file = any(isinstance(c, ast.Call) and ast.unparse(c.func).endswith("load_config_file")
                             for c in ast.walk(node))
            if any("Namespace" in p for p in params) or reads_file:
                routes.append(f"{m}.{node.name}")
            elif node.args.args and (node.args.args[0].arg == "cfg" or any(p in configs for p in params)):
                if _copies_fields(node, node.args.args[0].arg):
                    mappings.append(f"{m}.{node.name}")
    return sorted(routes), sorted(mappings)


def _copies_fields(fn: ast.FunctionDef, cfg: str) -> bool:
    """Whether ``fn`` copies a field of its config argument into a keyword by hand
    (``max_steps=cfg.train_steps``, ``tools=list(cfg.tools)``) rather than taking the declared ones
    through ``config.stage_config``; a value computed from several (``min(cfg.a, cfg.b)``) is not a copy."""
    def copied(value: ast.expr) -> bool:
        if isinstance(value, ast.Call) and ast.unparse(value.func) == "list" and len(value.args) == 1:
            value = value.args[0]
        return isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == cfg
    return any(isinstance(c, ast.Call) and any(k.arg and copied(k.value) for k in c.keywords) for c in ast.walk(fn))


def _untested(mods: set[str]) -> list[str]:
    """Modules (not ``__init__``) that no file under tests/ imports, directly or as ``from P import m``,
    and that hold no doctest (the default test run collects the package's doctests too)."""
    seen: set[str] = set()
    for path in (ROOT / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                seen |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                seen |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    packages = {m for m in mods if (PKG / Path(*m.split(".")[1:]) / "__init__.py").exists()}
    def doctested(m: str) -> bool:
        return ">>> " in (PKG / Path(*m.split(".")[1:])).with_suffix(".py").read_text(encoding="utf-8")

    return sorted(m for m in mods - packages if m not in seen and m != "toolformer_kit" and not doctested(m))


def _tau_f_resolvers(trees: dict[str, ast.Module]) -> list[str]:
    """Functions that read a tool's own annotation settings (``.annotation``/``AnnotationSettings``)
    and ``tau_f`` together: each is a place that decides which τf a tool runs at."""
    found = []
    for m, t in trees.items():
        for node in ast.walk(t):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                src = ast.unparse(node)
                if "tau_f" in src and re.search(r"\.annotation\b|AnnotationSettings\(", src) \
                        and not any(isinstance(c, ast.FunctionDef) and c is not node and "tau_f" in ast.unparse(c)
                                    for c in ast.walk(node)):
                    found.append(f"{m}.{node.name}")
    return sorted(found)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    result = measure()
    if "--json" in argv:
        print(json.dumps(result, indent=1, ensure_ascii=False))
        return
    for k, v in result.items():
        if isinstance(v, dict):
            print(f"{k}:")
            for c, row in v.items():
                print(f"  {c}: " + ", ".join(f"{a} {b}" for a, b in row.items()))
        elif isinstance(v, list):
            print(f"{k}: {len(v)}" + "".join(f"\n  {x}" for x in v))
        else:
            print(f"{k}: {v}")


if __name__ == "__main__":
    main()
