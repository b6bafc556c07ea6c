"""The microversions at which a handler changes, for the version-table unit tests."""

from volumesvc.api import versioned


def version_starts(handler) -> set:
    """Versions at which ``handler``'s behaviour or schemas change."""
    starts = {low for kind in getattr(handler, "_schemas", {}).values()
              for low, _high, _schema, _opts in kind}
    key = getattr(handler, "versioned_key", None)
    if key is not None:
        starts.update(low for low, _high, _func in versioned.VERSIONED_METHODS[key])
    return starts
