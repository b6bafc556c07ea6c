"""Discovery of the option modules in ``volumesvc.conf``.

Each module in this package (other than this one, ``__init__`` and ``ksa``,
which helps the others) must define ``register_opts(conf)`` and
``list_opts()``. New modules are found
automatically, so adding an option group never means editing a list here;
a module that forgets ``list_opts`` fails loudly instead of silently
missing from the sample file.
"""

import importlib
import pathlib
import pkgutil

_SKIP = {"opts", "ksa"}
# The package's directory and name, taken from this module rather than by
# importing the package: ``volumesvc.conf`` imports this module.
_PACKAGE_DIR = str(pathlib.Path(__file__).parent)
_PACKAGE = __name__.rpartition(".")[0]


def option_modules():
    """Return the imported option modules, sorted by name for stable output."""
    modules = []
    for info in sorted(pkgutil.iter_modules([_PACKAGE_DIR]), key=lambda m: m.name):
        if info.name in _SKIP or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{_PACKAGE}.{info.name}")
        for needed in ("register_opts", "list_opts"):
            if not hasattr(module, needed):
                raise RuntimeError(f"{_PACKAGE}.{info.name} lacks {needed}()")
        modules.append(module)
    return modules


def list_opts():
    """Entry point for oslo-config-generator: [(group, [opts]), ...]."""
    merged: dict = {}
    for module in option_modules():
        for group, options in module.list_opts():
            key = group.name if hasattr(group, "name") else group
            merged.setdefault(key, []).extend(options)
    return [(group, opts) for group, opts in sorted(merged.items(), key=lambda kv: kv[0])]
