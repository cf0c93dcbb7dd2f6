"""The tutorial's own files found by where they are (beyond the tutorial): own_modules() loads the
agent's backend.py, tools.py and harness.py for `from plainagent import run`, so a person's own
tools.py beside their script stays theirs; refuse_shadowed() says so where `import tools` found
theirs."""

import importlib
import importlib.util
import sys
import threading
import types

from plainagent.core.ownfiles import AGENT_FOLDER, real


def refuse_shadowed(*modules: types.ModuleType) -> None:
    """Raise ImportError, naming both files, for a module of the tutorial's four (backend, tools)
    that Python took from somewhere else than the agent's folder: a person's own tools.py beside
    their script comes first on the import path, and the agent would run with it."""
    for module in modules:
        if not is_ours(module, module.__name__):
            ours = AGENT_FOLDER / f"{module.__name__}.py"
            theirs = getattr(module, "__file__", None) or module.__name__
            raise ImportError(
                f"{theirs} is imported as the agent's {module.__name__} module in place of {ours}: "
                "import the agent with `from plainagent import run` instead, which keeps yours"
            )


def is_ours(module: types.ModuleType | None, name: str) -> bool:
    """Whether a module is the agent's own file of that name (backend.py, tools.py, ...)."""
    found = getattr(module, "__file__", None)
    return found is not None and real(found) == real(AGENT_FOLDER / f"{name}.py")


OWN_MODULES = ("backend", "tools", "harness")  # in the order they load: harness imports the others
LOADING = threading.Lock()
LOADED: dict[str, types.ModuleType] = {}  # once per process: a second copy would be other tools


def own_modules() -> dict[str, types.ModuleType]:
    """The agent's own backend.py, tools.py and harness.py, found by where they are, whatever a
    person's import path holds (`from plainagent import run`). Where a name is ours anyway (already
    imported, or the first the path finds), it is imported as usual, once, under its name. A module
    of the person's by one of these names (their tools.py beside their script) stays theirs: ours
    is loaded from its file and bound to the name only while harness.py imports it, then the name
    is theirs again, in sys.modules and on the path."""
    with LOADING:
        if LOADED:
            return LOADED
        before = {name: sys.modules.get(name) for name in OWN_MODULES}
        usual = [
            name
            for name, module in before.items()
            if is_ours(module, name) or module is None and found_as_ours(name)
        ]
        loaded: dict[str, types.ModuleType] = {}
        try:
            for name in OWN_MODULES:
                if name in usual:
                    loaded[name] = importlib.import_module(name)
                else:
                    loaded[name] = sys.modules[name] = from_file(name)
        finally:
            for name, module in before.items():
                if name in usual:
                    continue
                if module is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = module
        LOADED.update(loaded)
        return LOADED


def from_file(name: str) -> types.ModuleType:
    """The agent's module of that name, loaded from its file in the agent's folder."""
    spec = importlib.util.spec_from_file_location(name, AGENT_FOLDER / f"{name}.py")
    assert spec is not None and spec.loader is not None  # a .py file's
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import binds it, for the imports inside it
    spec.loader.exec_module(module)
    return module


def found_as_ours(name: str) -> bool:
    """Whether importing the name now would find the agent's own file."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a module of the name without a spec, say
        return False
    origin = spec.origin if spec is not None else None
    return origin is not None and real(origin) == real(AGENT_FOLDER / f"{name}.py")
