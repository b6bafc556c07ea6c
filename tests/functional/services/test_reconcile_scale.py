"""``volume_attachment cleanup --all-servers``: Cinder requests grow with pages, not servers.

Runs the real command, conductor and compute against a counting Cinder
double; each adapter call is one HTTP request to a real Cinder.
"""

import pytest

from tests.fixtures.cinder import CountingCinder
from tests.functional.stack import Stack
from volumesvc.cmd import manage_attachments

PAGE = 100
DANGLING = 5


class _Args:
    server_id = None
    all_servers = True
    batch_size = 100
    dry_run = False
    json = True


@pytest.fixture
def counted(tmp_path):
    s = Stack(tmp_path, cinder_wrapper=CountingCinder,
              conf_overrides={("cinder", "list_page_size"): PAGE})
    yield s
    s.stop()


def _walk(stack, servers, capsys):
    ctx = stack.admin_context()
    for _uuid, _volume_id, attachment_id in servers[:DANGLING]:
        stack.cinder.inner.attachment_delete(ctx, attachment_id)  # behind our back
    stack.cinder.reset()
    commands = manage_attachments.VolumeAttachmentCommands(
        stack.conf, db=stack.db, cinder=stack.cinder, conductor=stack.conductor_api())
    assert commands.cleanup(_Args()) == 0
    capsys.readouterr()
    return dict(stack.cinder.by_method)


def test_requests_grow_with_pages_of_attachments_not_with_servers(counted, capsys):
    stack = counted
    servers = stack.populate_attached_servers(1000)
    by_method = _walk(stack, servers, capsys)
    attachments = 1000 - DANGLING
    # One listing of every attachment (10 pages: the last one short), one page
    # of available volumes, and one GET per suspected BDM to confirm it.
    assert by_method == {"attachment_list_page": attachments // PAGE + 1,
                         "volume_id_page": 1, "attachment_get": DANGLING}
    assert sum(by_method.values()) == 16
    # Nothing else changed: every healthy server keeps its BDM and attachment.
    assert len(stack.cinder.inner.attachments) == attachments
