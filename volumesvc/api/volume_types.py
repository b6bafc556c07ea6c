"""Cinder's volume types as an API worker last read them, reused for a few seconds.

Checking a boot's BDM ``volume_type`` (2.67) needs the types the caller can
see. Asking Cinder on every ``POST /servers`` put one request per boot into
cinder-api, the slowest queue of a boot storm, and made the POST wait in it.
The list is kept per project (private types differ by project; admins see
all) for ``[cinder] volume_type_cache_seconds`` and read again whenever the
wanted type is not in it.
"""

import threading
import time


class VolumeTypes:
    """One per API worker (held by ``Deps``); safe for its request threads."""

    def __init__(self, conf, cinder, clock=time.monotonic):
        self._ttl = conf.cinder.volume_type_cache_seconds
        self._cinder = cinder
        self._clock = clock
        self._lock = threading.Lock()
        self._lists = {}  # (project_id, is_admin) -> (read at, types)
        self._reading = {}  # key -> Lock held while one thread reads Cinder for it

    def visible(self, context, wanted):
        """The types ``context`` can see, fresh enough to contain ``wanted`` if it exists.

        ``wanted`` is an id or a name; when the kept list lacks it, or is
        older than the TTL, Cinder is asked again, by one thread per key:
        the others wait for that answer (a storm of typed boots arriving
        together would otherwise all miss at once and all ask).
        """
        key = (context.project_id, bool(getattr(context, "is_admin", False)))
        found = self._fresh(key, wanted)
        if found is not None:
            return found
        with self._lock:
            reading = self._reading.setdefault(key, threading.Lock())
        with reading:
            # Another thread may have read it while this one waited.
            found = self._fresh(key, wanted)
            if found is not None:
                return found
            now = self._clock()
            types = self._cinder.get_volume_types(context)
            if self._ttl > 0:
                with self._lock:
                    self._lists[key] = (now, types)
            return types

    def _fresh(self, key, wanted):
        """The kept list if it is younger than the TTL and has ``wanted``, else None."""
        with self._lock:
            read_at, types = self._lists.get(key, (None, None))
        if types is None or self._clock() - read_at >= self._ttl:
            return None
        if any(wanted in (t.get("id"), t.get("name")) for t in types):
            return types
        return None
