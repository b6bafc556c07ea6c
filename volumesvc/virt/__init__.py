"""Compute drivers, and how ``[DEFAULT] compute_driver`` names one.

``compute_driver`` is either a short name from :data:`DRIVERS` or a
``package.module:Class`` path, so a deployment (or a benchmark) can run a
driver that lives outside this package, importable through ``PYTHONPATH``.
"""

import importlib

from volumesvc import exception

# NOTE: "module:Class" strings imported only when chosen, never at import
# time: the libvirt driver brings the libvirt binding (libvirt-python, a heavy
# optional dependency from the ``libvirt`` extra) with it, and a compute on
# another driver must not need it. It also keeps virt/driver.py, the interface
# every driver imports, from importing its own subclasses (an import cycle).
DRIVERS = {
    "libvirt": "volumesvc.virt.libvirt.driver:LibvirtDriver",
    "fake": "volumesvc.virt.fake:FakeDriver",
}


def driver_class(name):
    """The class ``name`` (a short name or ``module:Class``) stands for."""
    path = DRIVERS.get(name, name)
    module_name, sep, class_name = path.partition(":")
    if not sep or not module_name or not class_name:
        raise exception.ConfigInvalid(reason=(
            f"unknown compute_driver {name!r}; use one of {', '.join(sorted(DRIVERS))} "
            "or a package.module:Class path"))
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise exception.ConfigInvalid(
            reason=f"compute_driver {name!r} cannot be loaded: {exc}") from exc


def load_driver(conf, **kwargs):
    """Build the driver named by ``[DEFAULT] compute_driver``.

    ``kwargs`` go to the driver's constructor (the libvirt driver accepts a
    ``libvirt_module`` so tests inject ``volumesvc.virt.fake.FakeLibvirt``
    instead of the real binding).
    """
    return driver_class(conf.compute_driver)(conf, **kwargs)
