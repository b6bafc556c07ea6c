"""Domain exceptions. None of them knows about HTTP.

The API maps them to status codes and fault bodies in one place
(``volumesvc/api/errors.py``). Each carries a ``msg_fmt`` filled from keyword
arguments so the message is built where the facts are known.
"""


class VolumesvcException(Exception):
    """Base class: ``msg_fmt % kwargs`` is the message."""

    msg_fmt = "An unknown exception occurred."

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError):
                message = self.msg_fmt
        self.message = str(message)
        super().__init__(self.message)

    def format_message(self):
        return self.message


class NotFound(VolumesvcException):
    msg_fmt = "Resource could not be found."


class Invalid(VolumesvcException):
    msg_fmt = "Invalid input received: %(reason)s"


class Conflict(VolumesvcException):
    msg_fmt = "Conflict: %(reason)s"


class Forbidden(VolumesvcException):
    msg_fmt = "Forbidden."


class ServiceUnavailable(VolumesvcException):
    msg_fmt = "Service unavailable: %(reason)s"


class DatabaseUnavailable(Exception):
    """The database could not be reached, as an RPC server sends it to its caller.

    Raised from oslo.db's or SQLAlchemy's error (``common/outage.py``), so
    that it crosses RPC as a class of an allowed module instead of a
    ``RemoteError``. Deliberately not a :class:`VolumesvcException`: code
    that records one of those as the operation's fault and gives up must not
    take an outage for it.
    """

    MESSAGE = ("The database did not answer in time (it is down or every connection "
               "of the pool is busy); retry the request later.")

    def __init__(self, message=None):
        super().__init__(message or self.MESSAGE)


class ServiceNotFound(NotFound):
    msg_fmt = "Service %(service_id)s could not be found."


class HostBinaryNotFound(NotFound):
    msg_fmt = "Could not find binary %(binary)s on host %(host)s."


class InstanceNotFound(NotFound):
    msg_fmt = "Instance %(instance_id)s could not be found."


class FlavorNotFound(NotFound):
    msg_fmt = "Flavor %(flavor_id)s could not be found."


class VolumeNotFound(NotFound):
    msg_fmt = "Volume %(volume_id)s could not be found."


class VolumeAttachmentNotFound(NotFound):
    msg_fmt = "Volume attachment %(attachment_id)s could not be found."


class VolumeBDMNotFound(NotFound):
    msg_fmt = "No volume Block Device Mapping with id %(volume_id)s."


class VolumeBDMIsMultiAttach(Invalid):
    msg_fmt = ("Block Device Mapping %(volume_id)s is a multi-attach volume and is not "
               "valid for this operation.")


class InstanceNotReady(Invalid):
    msg_fmt = "Instance %(instance_id)s is not ready"


class ConsoleNotAvailable(NotFound):
    msg_fmt = "Guest does not have a console available."


class AssistedSnapshotNotSupported(VolumesvcException):
    msg_fmt = "Assisted volume snapshots are not supported by this compute driver."


class ImageNotFound(NotFound):
    msg_fmt = "Image %(image_id)s could not be found."


class SnapshotNotFound(NotFound):
    msg_fmt = "Snapshot %(snapshot_id)s could not be found."


class VolumeTypeNotFound(NotFound):
    msg_fmt = "Volume type %(id_or_name)s could not be found."


class InstanceInvalidState(Invalid):
    msg_fmt = ("Instance %(instance_uuid)s in %(attr)s %(state)s. Cannot %(method)s "
               "while the instance is in this state.")


class InstanceIsLocked(Invalid):
    msg_fmt = "Instance %(instance_uuid)s is locked"


class UnexpectedTaskStateError(VolumesvcException):
    msg_fmt = ("Conflict updating instance %(instance_uuid)s. "
               "Expected: %(expected)s. Actual: %(actual)s")


class CinderConnectionFailed(ServiceUnavailable):
    msg_fmt = "Connection to cinder host failed: %(reason)s"


class GlanceConnectionFailed(ServiceUnavailable):
    msg_fmt = "Connection to glance host failed: %(reason)s"


class VirtDriverError(VolumesvcException):
    msg_fmt = "Hypervisor operation failed: %(reason)s"


class ConfigInvalid(Invalid):
    msg_fmt = "Invalid configuration: %(reason)s"


# Virt driver (volumesvc/virt): names follow Nova's so callers read the same.
class HypervisorUnavailable(VirtDriverError):
    msg_fmt = "Connection to the hypervisor is broken: %(reason)s"


class FilterPatternTooComplex(Invalid):
    msg_fmt = ("The database gave up on the regular expression of a filter (%(reason)s); "
               "use a simpler pattern.")


class InstanceExists(Invalid):
    msg_fmt = "Instance %(name)s already exists."


class DiskNotFound(NotFound):
    msg_fmt = "No disk at %(location)s"


class DeviceDetachFailed(VirtDriverError):
    msg_fmt = "Device detach failed for %(device)s: %(reason)s"


class VolumeDriverNotFound(NotFound):
    msg_fmt = "Could not find a handler for %(driver_type)s volume."


class MultiattachNotSupportedByVirtDriver(VirtDriverError):
    msg_fmt = ("Volume %(volume_id)s has 'multiattach' set, which is not supported "
               "for this instance.")


class ExtendVolumeNotSupported(VirtDriverError):
    msg_fmt = "Volume size extension is not supported by the hypervisor."


class ExtendVolumeFailed(VolumesvcException):
    msg_fmt = "Extending volume %(volume_id)s failed: %(reason)s"


class ReimageFailed(VolumesvcException):
    msg_fmt = ("Rebuild could not reimage root volume %(volume_id)s with image "
               "%(image_id)s: %(reason)s")


class RebuildRootVolumeMissing(VolumesvcException):
    msg_fmt = "Instance %(instance_uuid)s has no root volume to rebuild from."


class RebuildInterrupted(VolumesvcException):
    msg_fmt = ("The rebuild of instance %(instance_uuid)s was interrupted: its compute "
               "%(host)s stopped while it was in task %(task_state)s. Rebuild the server "
               "again or delete it.")


class BuildInterrupted(VolumesvcException):
    msg_fmt = ("The build of instance %(instance_uuid)s was interrupted: its compute "
               "%(host)s stopped while it was in task %(task_state)s. Delete the server "
               "and create it again.")


class UnshelveInterrupted(VolumesvcException):
    msg_fmt = ("The unshelve of instance %(instance_uuid)s was interrupted: its compute "
               "%(host)s stopped while it was in task %(task_state)s. The server is "
               "shelved offloaded again; unshelve it again.")


class ExtendCompletionFailed(VolumesvcException):
    msg_fmt = ("Reporting the extend of volume %(volume_id)s to Cinder "
               "(os-extend_volume_completion, error=%(error)s) failed: %(reason)s")


class MarkerNotFound(NotFound):
    msg_fmt = "Marker %(marker)s could not be found."


class FlavorExists(Conflict):
    msg_fmt = "Flavor with name %(name)s or ID %(flavor_id)s already exists."


class BDMNotFound(NotFound):
    msg_fmt = "Block Device Mapping %(id)s could not be found."


class InstanceActionNotFound(NotFound):
    msg_fmt = "Action for request_id %(request_id)s on instance %(instance_uuid)s not found"


class InstanceActionEventNotFound(NotFound):
    msg_fmt = "Event %(event)s not found for action id %(action_id)s"


class CinderAPIError(VolumesvcException):
    """A Cinder answer with no more specific translation; ``code`` is the HTTP status."""

    msg_fmt = "Cinder request failed with HTTP %(code)s: %(reason)s"

    def __init__(self, message=None, **kwargs):
        super().__init__(message, **kwargs)
        self.code = kwargs.get("code")


# Boot with block_device_mapping_v2 (api/logic/bdm.py): Nova's classes and
# messages, so clients and tempest see the same 400/409 texts.
class InvalidBDM(Invalid):
    msg_fmt = "Block Device Mapping is Invalid."


class InvalidBDMFormat(InvalidBDM):
    msg_fmt = "Block Device Mapping is Invalid: %(details)s"


class InvalidBDMSnapshot(InvalidBDM):
    msg_fmt = "Block Device Mapping is Invalid: failed to get snapshot %(id)s."


class InvalidBDMVolume(InvalidBDM):
    msg_fmt = "Block Device Mapping is Invalid: failed to get volume %(id)s."


class InvalidBDMImage(InvalidBDM):
    msg_fmt = "Block Device Mapping is Invalid: failed to get image %(id)s."


class InvalidBDMBootSequence(InvalidBDM):
    msg_fmt = ("Block Device Mapping is Invalid: Boot sequence for the instance and "
               "image/block device mapping combination is not valid.")


class InvalidBDMLocalsLimit(InvalidBDM):
    msg_fmt = ("Block Device Mapping is Invalid: You specified more local devices than "
               "the limit allows")


class InvalidBDMEphemeralSize(InvalidBDM):
    msg_fmt = ("Ephemeral disks requested are larger than the instance type allows. If no "
               "size is given in one block device mapping, flavor ephemeral size will be "
               "used.")


class InvalidBDMSwapSize(InvalidBDM):
    msg_fmt = "Swap drive requested is larger than instance type allows."


class InvalidBDMVolumeNotBootable(InvalidBDM):
    msg_fmt = "Block Device %(id)s is not bootable."


class InvalidBDMVolumeType(InvalidBDM):
    """A requested volume type Cinder does not know: 400 at boot (404 elsewhere)."""

    msg_fmt = "Volume type %(id_or_name)s could not be found."


class MultiattachNotSupportedByHost(Conflict):
    msg_fmt = ("Volume %(volume_id)s is multiattach, but server %(instance_uuid)s is on "
               "host %(host)s, whose compute driver cannot share a disk between servers "
               "(capability supports_multiattach is off).")


class MultiattachNotSupportedOldMicroversion(Invalid):
    msg_fmt = "Multiattach volumes are only supported starting with compute API version 2.60."


class OverQuota(Forbidden):
    msg_fmt = "Quota exceeded for resources: %(overs)s"


# Key pairs and quotas (objects/keypair.py, volumesvc/quota.py): Nova's messages.
class KeypairNotFound(NotFound):
    msg_fmt = "Keypair %(name)s not found for user %(user_id)s"


class KeyPairExists(Conflict):
    msg_fmt = "Key pair '%(key_name)s' already exists."


class InvalidKeypair(Invalid):
    msg_fmt = "Keypair data is invalid: %(reason)s"


class KeypairLimitExceeded(OverQuota):
    msg_fmt = "Quota exceeded, too many key pairs."


class TooManyInstances(OverQuota):
    msg_fmt = ("Quota exceeded for %(overs)s: Requested %(req)s, but already used "
               "%(used)s of %(allowed)s %(overs)s")


class InvalidQuotaValue(Invalid):
    msg_fmt = "%(reason)s"


class GlanceAPIError(VolumesvcException):
    """A Glance answer with no more specific translation; ``code`` is the HTTP status."""

    msg_fmt = "Glance request failed with HTTP %(code)s: %(reason)s"


class TooManyDiskDevices(Forbidden):
    msg_fmt = ("The maximum allowed number of disk devices (%(maximum)d) to attach to a "
               "single instance has been exceeded.")


class DevicePathInUse(Conflict):
    msg_fmt = "The supplied device path (%(path)s) is in use."


class VolumeAlreadyAttached(Invalid):
    msg_fmt = "volume %(volume_id)s is already attached to instances: %(instance_uuids)s"


class VolumeAttachPending(VolumeAlreadyAttached):
    """An accepted attach of the volume to the server is not done yet.

    Its ``kwargs["pending"]`` are that request's cast keyword arguments, so
    that an API can tell a repeat of it (2.107) from another request.
    """


class TaggedAttachmentNotSupported(Invalid):
    msg_fmt = ("Tagged volume attachment is not supported for this instance's "
               "compute host.")


# Volume attachments API (api/logic/attach.py): Nova's messages where Nova has one.
class InvalidDevicePath(Invalid):
    msg_fmt = "The supplied device path (%(path)s) is invalid."


class MultiattachToShelvedNotSupported(Invalid):
    msg_fmt = ("Attaching multiattach volumes is not supported for shelved-offloaded "
               "instances.")


class VolumeTaggedAttachToShelvedNotSupported(Invalid):
    msg_fmt = ("Tagged volume attachment is not supported for shelved-offloaded "
               "instances.")


class VolumeNotAttachedToInstance(NotFound):
    msg_fmt = "Instance %(instance_uuid)s is not attached to volume %(volume_id)s"


class CannotDetachRootVolume(Invalid):
    msg_fmt = "Cannot detach a root device volume"


class AttachmentPropertyNotMutable(Invalid):
    msg_fmt = "The %(property)s property is not mutable"


class MultiattachSwapVolumeNotSupported(Invalid):
    msg_fmt = ("Swapping multi-attach volumes with more than one read/write attachment "
               "is not supported.")


class SwapVolumeNotMigrating(Conflict):
    msg_fmt = ("Volume %(volume_id)s is not being migrated: the volume of an attachment "
               "is only swapped while Cinder migrates or retypes it.")


class SwapVolumeNotSupportedByVirtDriver(Invalid):
    msg_fmt = "The compute driver of this host cannot swap the volume of a running server."


class ReadOnlyVolumeAttachedReadWrite(Invalid):
    msg_fmt = ("Volume %(volume_id)s is read-only (Cinder's readonly flag): it can only be "
               "attached with read_only true.")


class ReadOnlyAttachNotSupportedByCinder(Conflict):
    msg_fmt = ("Cinder cannot make read-only attachments: its volume API goes up to "
               "%(version)s and an attachment's mode needs %(minimum)s.")


class SwapVolumeInvalid(Invalid):
    msg_fmt = "Invalid volume for swap: %(reason)s"


class ComputeHostDown(Conflict):
    msg_fmt = ("Compute host %(host)s of instance %(instance_uuid)s is not up; retry when "
               "the service is back.")


class ConductorTimeout(ServiceUnavailable):
    msg_fmt = ("volumesvc-conductor did not answer in time. The %(action)s may still "
               "complete or be rolled back; check %(where)s before retrying.")


class VolumeRequestAbandoned(VolumesvcException):
    msg_fmt = ("The %(kind)s of volume %(volume_id)s was given up after %(attempts)d "
               "attempts: each conductor that ran it stopped before it was done.")


class CreateImageAbandoned(ServiceUnavailable):
    msg_fmt = ("Service unavailable: this createImage ran longer than [conductor] "
               "create_image_grace (%(grace)s s), so the conductors ended it as abandoned "
               "and deleted what it made; ask again.")


class ConductorTooOld(ServiceUnavailable):
    msg_fmt = ("volumesvc-conductor is not on the same version as volumesvc-api, so this "
               "request cannot be handled until the upgrade is complete. Please try again "
               "later.")


class UnshelveInstanceInvalidState(Conflict):
    msg_fmt = ("The unshelve action on server %(instance_uuid)s cannot name %(what)s while "
               "it is %(state)s: only a SHELVED_OFFLOADED server is placed again.")


class UnshelveHostNotInAZ(Invalid):
    msg_fmt = ("Host '%(host)s' is not in the requested availability zone "
               "'%(availability_zone)s'.")


class ComputeHostNotFound(Invalid):
    """400, not 404: the host comes from the request body (unshelve at 2.91)."""

    msg_fmt = "Compute host %(host)s could not be found."


class AvailabilityZoneNotFound(Invalid):
    msg_fmt = "The requested availability zone is not available"


class ShelveNotSupported(Invalid):
    msg_fmt = ("Shelving server %(instance_uuid)s is not supported by this service: only "
               "servers that boot from a volume can be shelved.")


class TooManyTags(Invalid):
    msg_fmt = "The number of tags exceeded the per-server limit %(limit)d"


class InstanceTagNotFound(NotFound):
    msg_fmt = "Instance %(instance_id)s has no tag '%(tag)s'"


class MetadataItemNotFound(NotFound):
    msg_fmt = "Metadata item was not found"


class MetadataLimitExceeded(Forbidden):
    msg_fmt = "Quota exceeded for metadata: the limit is %(allowed)d items per server"


# Encrypted volumes (volumesvc/keymgr, volumesvc/compute/encryption.py). Each
# carries ``code``: the attach's fault (API 2.106) shows it.
_KEY = "The key manager (%(backend)s) %(what)s key %(key_id)s of volume %(volume_id)s"


class EncryptionKeyNotReadable(Forbidden):
    msg_fmt = _KEY.replace("%(what)s", "refused") + " to this user: %(reason)s"
    code = 403


class EncryptionKeyNotFound(Invalid):
    msg_fmt = _KEY.replace("%(what)s", "has no") + " (its encryption_key_id)"
    code = 400


class KeyManagerUnavailable(ServiceUnavailable):
    msg_fmt = _KEY.replace("%(what)s", "could not give") + ": %(reason)s"
    code = 503


class VolumeEncryptionNotSupported(Invalid):
    msg_fmt = ("Volume %(volume_id)s is encrypted (provider %(provider)s, control "
               "location %(control_location)s), which this compute cannot open for a "
               "%(driver_volume_type)s volume: %(reason)s")
    code = 400


class EncryptedSwapNotSupported(Invalid):
    msg_fmt = ("Volume %(volume_id)s is encrypted and decrypted on the compute host by "
               "os-brick (dm-crypt): swapping it (Cinder's migration or retype of an in-use "
               "volume) is not supported; volumes QEMU decrypts can be swapped")
    code = 400


class MigrationNotFound(NotFound):
    msg_fmt = "Migration %(migration_id)s could not be found."


class MigrationNotFoundForInstance(NotFound):
    msg_fmt = "Migration %(migration_id)s not found for instance %(instance_id)s"


class InvalidMigrationState(Conflict):
    """409, as Nova's: the migration is not in a state the action accepts."""

    msg_fmt = ("Migration %(migration_id)s state of instance %(instance_uuid)s is "
               "%(state)s. Cannot %(method)s while the migration is in this state.")


class MigrationPreCheckError(Invalid):
    msg_fmt = "Migration pre-check error: %(reason)s"


class LiveMigrationFailed(VolumesvcException):
    msg_fmt = "Live migration of instance %(instance_uuid)s failed: %(reason)s"


class LiveMigrationAborted(LiveMigrationFailed):
    msg_fmt = "Live migration of instance %(instance_uuid)s was aborted: %(reason)s"
