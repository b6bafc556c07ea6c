# Shared by the guest's /init, vsguest-watch and vsdisk (sourced, busybox sh).
#
# Every line the guest's own tooling prints starts with "VSGUEST " so that a
# reader of the serial console can tell it from kernel messages and from what
# a user_data script prints (doc/source/admin/guest-image.rst).
#
# VSGUEST_SYS and VSGUEST_RUN move sysfs and the watcher's state elsewhere:
# the unit tests run these scripts on the host against a made-up /sys.
VSGUEST_SYS=${VSGUEST_SYS:-/sys}
VSGUEST_RUN=${VSGUEST_RUN:-/run/vsguest}

vs_say() {
    echo "VSGUEST $*"
}

# The serial the hypervisor gave a disk, or nothing. virtio-blk: the kernel's
# serial attribute. SCSI: the unit serial number VPD page (0x80); its first
# four bytes are the page header, the rest may be padded with spaces or NULs.
vs_serial() {
    if [ -r "$VSGUEST_SYS/block/$1/serial" ]; then
        tr -d '\000' < "$VSGUEST_SYS/block/$1/serial" | sed 's/ *$//'
    elif [ -r "$VSGUEST_SYS/block/$1/device/vpd_pg80" ]; then
        tail -c +5 "$VSGUEST_SYS/block/$1/device/vpd_pg80" | tr -d '\000' | sed 's/^ *//; s/ *$//'
    fi
}

# The whole disks the watcher reports: SCSI disks and virtio-blk disks
# (partitions and CD-ROMs are not volumes).
vs_disks() {
    for path in "$VSGUEST_SYS"/block/sd* "$VSGUEST_SYS"/block/vd*; do
        [ -e "$path" ] && echo "${path##*/}"
    done
}
