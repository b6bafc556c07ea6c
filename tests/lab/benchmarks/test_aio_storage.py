"""What benchmarks.aio_storage reads from cinder-api's log and from the compute's metrics."""

import pytest

from benchmarks import aio_storage

LOG = (
    '2026-12-03 17:18:21.898 648 INFO eventlet.wsgi.server [req-1 admin admin - - - -] '
    '10.251.3.14 "POST /v3/attachments/e9941454-25ca-4104-9a27-2975e444e9ab/action HTTP/1.1" '
    'status: 204  len: 334 time: 0.8922522\n'
    '2026-12-03 17:18:22.159 648 INFO eventlet.wsgi.server [None req-2 admin admin - - - -] '
    '10.251.3.1 "PUT /v3/attachments/5c057e9c-eb38-4c98-998e-cbed1fa77a1e HTTP/1.1" '
    'status: 200  len: 26253 time: 1.5\n'
    '2026-12-03 17:18:22.160 648 INFO cinder.api.openstack.wsgi [None req-3] something else\n'
)


def test_cinder_times_groups_requests_by_route_after_the_offset(tmp_path):
    path = tmp_path / "cinder-api.log"
    path.write_text("old line " * 10 + "\n" + LOG)
    times = aio_storage.cinder_times(str(path), offset=len("old line " * 10) + 1)
    assert times == {"POST /v3/attachments/{id}/action": [0.8922522],
                     "PUT /v3/attachments/{id}": [1.5]}
    assert aio_storage.cinder_times(str(tmp_path / "missing.log"), 0) == {}


def test_timings_delta_gives_count_and_mean_of_the_new_calls_only():
    before = {"operation attach_volume": (2.0, 4.0), "Cinder attachment_update": (2.0, 1.0)}
    after = {"operation attach_volume": (6.0, 16.0), "Cinder attachment_update": (2.0, 1.0),
             "driver attach_volume": (4.0, 2.0)}
    assert aio_storage.timings_delta(before, after) == {
        "operation attach_volume": (4.0, 3.0), "driver attach_volume": (4.0, 0.5)}


def test_memory_sums_rss_and_pss_per_name_and_skips_gone_processes(monkeypatch):
    sizes = {1: (1024, 512), 2: (2048, 1024), 3: None}
    monkeypatch.setattr(aio_storage, "_memory_kb", sizes.get)
    got = aio_storage.memory({1: "ceph-osd", 2: "ceph-osd", 3: "api"})
    assert got == {"ceph-osd": (3.0, 1.5, 2), "total": (3.0, 1.5, 2)}


def test_boot_sources_choose_the_boot_storms_root_volumes():
    assert aio_storage.parse_args([]).boot_sources == ["image", "blank"]
    assert aio_storage.parse_args(["--boot-sources", "blank"]).boot_sources == ["blank"]
    with pytest.raises(SystemExit):
        aio_storage.parse_args(["--boot-sources", "snapshot"])


def test_volumes_per_server_pair_volume_i_with_server_i_over_k():
    assert aio_storage.parse_args(["--volumes-per-server", "3"]).volumes_per_server == 3
    with pytest.raises(SystemExit):
        aio_storage.parse_args(["--volumes-per-server", "0"])
    text = aio_storage._attach_text([], 300, 3)
    assert "100 servers for N=300 attaches (3 volumes each)" in text
    assert "volume *i* to server *i* // 3" in text
