"""The package's layers: each module imports only its own layer and the ones below, with no cycles.

Imports inside functions count too: a cycle that only runs at call time is
still two modules that each need the other.
"""

import ast
import os

import benchctl

PACKAGE_DIR = os.path.dirname(benchctl.__file__)
# Lowest first. The root's own modules (the native core's controls and probes)
# form layer 1; a subpackage's layer is its place here. Subpackages on one
# layer may not import each other.
LAYERS = {
    "errors": -1,  # the error kinds and exit codes: every layer raises them, _validate too
    "_native": 0, "_procfs": 0, "_validate": 0, "_version": 0, "_plugins": 0,
    "": 1,
    "settings": 1.5, "_setting": 1.5,  # what a setting is, and the registry of them all
    "_system": 2,
    "probes": 2.5, "_probe": 2.5,  # what a probe is, and the registry the probe worker and Facts read
    "_results": 3, "_workloads": 3,
    "_run": 4,
    # what a cause is (and the kinds several share), the public names of its rule
    "_studies": 5, "rules": 5, "_cause": 5, "_switched_cause": 5, "_share_cause": 5,
    "_cli": 6,
    "pytest_plugin": 6,
}
EXEMPT = {"benchctl", "benchctl.__main__"}  # the package root re-exports; __main__ starts the CLI
# A cause package (benchctl._causes.<name>) holds one file per role, each on the layer of what it does
# (benchctl/_causes/__init__.py names the roles): (layer, the group it shares that layer with).
ROLES = {"control": (1, ""), "setting": (1.5, "settings"), "probe": (2.5, "probes"), "rule": (5, "_studies")}
# Registry modules share their layer's group with the role files they gather; the public rules module with the
# studies it re-exports.
GROUPS = {"settings": "settings", "_setting": "settings", "probes": "probes", "_probe": "probes", "rules": "_studies",
          "_cause": "_studies", "_switched_cause": "_studies", "_share_cause": "_studies"}


def _modules():
    for dirpath, _, files in os.walk(PACKAGE_DIR):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, os.path.dirname(PACKAGE_DIR))[:-3].replace(os.sep, ".")
                yield (rel[: -len(".__init__")] if rel.endswith(".__init__") else rel), path


def _imports(module: str, path: str) -> set[str]:
    """benchctl modules ``module`` imports, resolved to module names (packages as their name)."""
    package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "benchctl"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "benchctl":
                continue
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                found.add(candidate if candidate in MODULES else target)
    return {m for m in found if m != module}


def _layer(module: str) -> tuple[float, str]:
    parts = module.split(".")
    if parts[1:2] == ["_causes"]:
        if len(parts) <= 3:  # the causes package and each cause's package: they import nothing
            return -2, "_causes"
        return ROLES[parts[3]]
    if len(parts) >= 2 and parts[1] in LAYERS:  # a root module with a layer of its own, or a subpackage
        return LAYERS[parts[1]], GROUPS.get(parts[1], parts[1])
    return LAYERS[""], ""


MODULES = dict(_modules())
MODULES["benchctl._native"] = None  # the compiled core: imports nothing of ours
GRAPH = {m: _imports(m, p) for m, p in MODULES.items() if p is not None}


def test_every_import_goes_to_the_same_layer_or_below():
    wrong = []
    for module, targets in GRAPH.items():
        if module in EXEMPT:
            continue
        level, group = _layer(module)
        for target in targets:
            if target == "benchctl":
                wrong.append((module, target, "imports the package root"))
                continue
            t_level, t_group = _layer(target)
            if t_level > level or (t_level == level and t_group != group):
                wrong.append((module, target, f"layer {group or 'root'} -> {t_group or 'root'}"))
    assert not wrong, "\n".join(f"{m} imports {t}: {why}" for m, t, why in wrong)


def test_every_file_of_a_cause_package_has_a_role_and_its_package_files_import_nothing():
    causes = [m for m in MODULES if m.startswith("benchctl._causes.")]
    assert causes, "no cause package found"
    wrong = [m for m in causes if len(m.split(".")) == 4 and m.split(".")[3] not in ROLES]
    deep = [m for m in causes if len(m.split(".")) > 4]
    importing = [m for m in ["benchctl._causes", *causes] if len(m.split(".")) <= 3 and GRAPH.get(m)]
    assert not wrong, f"files of no role ({', '.join(ROLES)}): {wrong}"
    assert not deep, f"a cause package is one folder of role files: {deep}"
    assert not importing, f"a package file that imports (importing one role would load another): {importing}"


def test_no_import_cycles():
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for t in sorted(GRAPH.get(m, ())):
            if t in EXEMPT or t not in GRAPH:
                continue
            if state.get(t) == 1:
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(GRAPH):
        if m not in state and m not in EXEMPT:
            visit(m)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_every_module_declares_its_public_names():
    missing = [m for m, p in MODULES.items()
               if p is not None and m != "benchctl.__main__" and "__all__" not in open(p).read()]
    assert not missing, missing
