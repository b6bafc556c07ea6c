"""A block device mapping as the compute receives it: typed, read-only, decoded once.

BDMs reach the compute as plain dicts, the conductor's
``BlockDeviceMapping.to_dict()`` (``volumesvc/objects/block_device.py``):
RPC arguments and ``conductor.bdm_list``. The compute may not import
``objects/`` (computes hold no database layer, see
doc/source/contributor/house-rules.rst), so this is its own view of that
dict, with the object's field names. Why a view at all: read as dicts, a
misspelt key was a silent ``None``, and ``connection_info`` (the JSON string
Nova stores) was decoded by every reader with its own copy of the same
helper. Here it is decoded in one place, once per view.

The view never changes: a step that saves new values makes a new view
(:meth:`BDM.replace`), and the wire dict goes back out unchanged
(:meth:`BDM.to_wire`) wherever a dict crosses RPC or reaches a
notification, so the wire contract stays the conductor's.
"""

import copy
import dataclasses
import functools
import typing

from oslo_serialization import jsonutils


def encode_connection_info(info: dict | None) -> str | None:
    """The stored form of ``info``, for ``values`` a BDM is saved with.

    None stays None: a BDM without a connection stores NULL, as the
    conductor's object does.
    """
    return None if info is None else jsonutils.dumps(info)


@dataclasses.dataclass(frozen=True)
class BDM:
    """The fields of a BDM the compute reads, named as the conductor's object names them.

    Build it with :meth:`from_wire`; ``connection_info`` is the decoded
    dict (None without one), see its docstring.
    """

    uuid: str | None = None
    id: int | None = None
    instance_uuid: str | None = None
    source_type: str | None = None
    destination_type: str | None = None
    boot_index: int | None = None
    device_name: str | None = None
    device_type: str | None = None
    disk_bus: str | None = None
    volume_id: str | None = None
    snapshot_id: str | None = None
    image_id: str | None = None
    volume_size: int | None = None
    volume_type: str | None = None
    attachment_id: str | None = None
    attach_status: str | None = None
    tag: str | None = None
    delete_on_termination: bool = False
    read_only: bool = False
    deleted: bool = False
    # ISO 8601 strings on the wire (objects/base.py's to_dict); parsed by
    # the few readers that compare times.
    created_at: typing.Any = None
    updated_at: typing.Any = None
    deleted_at: typing.Any = None
    # The dict this view was made from: what goes back out, unknown keys
    # included (a newer conductor's field survives a round trip).
    _wire: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_wire(cls, values: dict) -> "BDM":
        """The view of ``values`` (a copy: the caller's dict may change, the view not)."""
        wire = dict(values)
        fields: dict[str, typing.Any] = {name: wire.get(name) for name in _FIELDS}
        for name in _FLAGS:
            fields[name] = bool(fields[name])
        return cls(**fields, _wire=wire)

    def to_wire(self) -> dict:
        """The dict this view stands for, as the conductor sent it (with any replacements).

        For RPC arguments, notifications and the virt layer's dict readers:
        a deep copy, so nothing done with it reaches the view.
        """
        return copy.deepcopy(self._wire)

    def replace(self, **values) -> "BDM":
        """A new view with ``values`` (stored form: ``connection_info`` encoded) applied.

        What a step saves through ``conductor.bdm_update`` it applies here
        too, so the next step reads the BDM as the database now has it.
        """
        return BDM.from_wire({**self._wire, **values})

    @property
    def is_volume(self) -> bool:
        """Backed by a Cinder volume (as the conductor's object says it)."""
        return self.destination_type == "volume"

    @property
    def has_connection(self) -> bool:
        """Whether a connection is saved (the stored value is not empty)."""
        return bool(self._wire.get("connection_info"))

    @property
    def connection_info_json(self) -> str | None:
        """The stored form, for a writer that saves only when the connection changed."""
        raw = self._wire.get("connection_info")
        return raw if raw is None or isinstance(raw, str) else jsonutils.dumps(raw)

    @property
    def connection_info(self) -> dict | None:
        """Cinder's connection info decoded, or None when the BDM has none.

        A fresh copy on every read: readers hand it to os-brick and libvirt,
        which write into it (a device path, an encryption record), as they
        did with the dict each of them once decoded for itself.
        """
        decoded = self._decoded
        return None if decoded is None else copy.deepcopy(decoded)

    @functools.cached_property
    def _decoded(self) -> dict | None:
        # Decoded on first read, not at construction: a BDM whose info is
        # never read (most of a listing) costs no decode.
        raw = self._wire.get("connection_info")
        if not raw:
            return None
        return jsonutils.loads(raw) if isinstance(raw, str) else raw


_FLAGS = ("delete_on_termination", "read_only", "deleted")
_FIELDS = tuple(f.name for f in dataclasses.fields(BDM) if f.name != "_wire")


def of(value) -> BDM:
    """``value`` as a view: a wire dict is wrapped, a view is returned as it is."""
    return value if isinstance(value, BDM) else BDM.from_wire(value)


def from_wire_list(values) -> list[BDM]:
    """Views of a listing (``conductor.bdm_list``, an RPC argument), in its order."""
    return [of(value) for value in values]


def to_wire_list(bdms) -> list[dict]:
    """The wire dicts of ``bdms``, for an RPC argument or a notification."""
    return [bdm.to_wire() for bdm in bdms]


def listed(conductor, context, instance_uuid) -> list[BDM]:
    """The server's BDMs from the conductor, as views."""
    return from_wire_list(conductor.bdm_list(context, instance_uuid=instance_uuid))


def replace_in(bdms: list, old: BDM, new: BDM) -> BDM:
    """Put ``new`` where ``old`` (the same object) is in ``bdms``; returns ``new``.

    For the steps that save a BDM of a listing other steps read after them
    (a build's volumes, a rebuild's root): the listing then holds the BDM
    as saved, as it did when the steps updated the dicts in place.
    """
    for i, bdm in enumerate(bdms):
        if bdm is old:
            bdms[i] = new
    return new
