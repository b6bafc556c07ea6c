"""The control-plane benchmark's bookkeeping: queue listings, host chunks, its table."""

from benchmarks import control_plane
from benchmarks.lib.storm_stack import HOST


def test_queue_listing_is_parsed_and_noise_ignored():
    out = ("conductor\t3\t1\ncompute.cp-001\t0\t1\n"
           "reply_ab12\t12\t1\nTimeout: 60.0 seconds ...\n")
    assert control_plane.parse_queues(out) == {
        "conductor": (3, 1), "compute.cp-001": (0, 1), "reply_ab12": (12, 1)}


def test_hosts_are_distinct_and_the_first_is_the_one_the_stack_waits_for():
    stack = control_plane.ControlPlaneStack(hosts=50, per_process=25, delay=0,
                                            api_workers=1, log=lambda *_: None)
    try:
        assert stack.hosts[0] == HOST and len(set(stack.hosts)) == 50
    finally:
        stack.stop()


def test_a_level_is_one_table_row():
    run = {"latencies": [0.1, 0.2], "probe": [0.01], "in_use_after": 12.5, "errors": []}
    level = {"hosts": 10, "hosts_used": 10, "n": 2, "run": run, "conductor_cpu": 0.25,
             "rabbit_cpu": 0.1, "max_queue_one": 7, "max_queue_total": 9,
             "conductor_pss": 80.0,
             "idle": {"conductor": 0.01, "rabbit": 0.02, "rabbit_rss": 130.0, "queues": 40,
                      "consumers": 42}}
    row = control_plane.row(level)
    assert row.count("|") == control_plane.HEADER.count("|")
    assert "| 25.0 % |" in row and "| 7 (9) |" in row and "12.5 s" in row
