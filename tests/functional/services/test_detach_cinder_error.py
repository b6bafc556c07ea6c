"""A 2.101 detach whose Cinder attachment delete fails after the disk left the guest.

Regression: the volume stayed ``detaching`` for ever, the API showed it
attached and every further detach was refused (400), since only a failure
of the guest's side rolled Cinder's ``os-begin_detaching`` back. Now the
volume is ``in-use`` again with the BDM and the fault, and a second detach
only finishes Cinder's side.
"""

from tests.functional.stack import BLANK_ROOT
from volumesvc import exception
from volumesvc.objects import block_device as bdm_obj

TOKEN = "u1:p1"
HOST = "fn-compute"


def _detach(stack, server, volume_id):
    stack.api("DELETE", f"/servers/{server}/os-volume_attachments/{volume_id}",
              version="2.101", token=TOKEN, status=202)


def _shown(stack, server):
    _, body, _ = stack.api("GET", f"/servers/{server}/os-volume_attachments",
                           version="2.106", token=TOKEN, status=200)
    return {a["volumeId"]: a for a in body["volumeAttachments"]}


def _in_domain(stack, server, volume_id):
    xml = stack.computes[HOST].manager.driver.get_domain_xml({"uuid": server})
    return f"<serial>{volume_id}</serial>" in xml


def _attached(stack):
    """An ACTIVE server and a volume attached to it at 2.101."""
    server = stack.boot(stack.context(), BLANK_ROOT)
    stack.wait_instance(server, "active")
    volume_id = stack.cinder.create(stack.context(), 1, "data", "")["id"]
    stack.attach_volume(server, volume_id, version="2.101", status=202)
    stack.wait(lambda: stack.cinder.get(None, volume_id)["status"] == "in-use",
               what="in-use")
    return server, volume_id


def test_a_cinder_500_on_the_attachment_delete_leaves_a_second_detach_possible(stack):
    server, volume_id = _attached(stack)
    bdm = bdm_obj.get_by_volume_and_instance(stack.db, stack.admin_context(), volume_id,
                                             server)
    stack.cinder.fail_next("attachment_delete",
                           exception.CinderAPIError(code=500, reason="Internal Server Error"))

    _detach(stack, server, volume_id)
    stack.wait(lambda: not _in_domain(stack, server, volume_id), what="the disk gone")
    stack.wait(lambda: _shown(stack, server)[volume_id]["status"] == "attached",
               what="the attachment shown attached again")
    assert stack.cinder.get(None, volume_id)["status"] == "in-use"
    shown = _shown(stack, server)[volume_id]
    assert "HTTP 500" in shown["fault"]["message"]
    assert [(a["id"], a["status"]) for a in stack.cinder.attachments.values()
            if a["volume_id"] == volume_id] == [(bdm.attachment_id, "attached")]

    _detach(stack, server, volume_id)
    stack.wait(lambda: volume_id not in _shown(stack, server),
               what="the BDM gone after the second detach")
    assert stack.cinder.get(None, volume_id)["status"] == "available"
    assert not [a for a in stack.cinder.attachments.values() if a["volume_id"] == volume_id]
    assert not _in_domain(stack, server, volume_id)


def test_a_delete_cinder_did_despite_its_error_finishes_the_detach(stack, monkeypatch):
    """The answer to the delete was lost: the attachment is gone, so is the BDM."""
    server, volume_id = _attached(stack)
    real = stack.cinder.attachment_delete

    def lost_answer(context, attachment_id):
        real(context, attachment_id)
        raise exception.CinderAPIError(code=504, reason="Gateway Timeout")
    monkeypatch.setattr(stack.cinder, "attachment_delete", lost_answer)

    _detach(stack, server, volume_id)
    stack.wait(lambda: volume_id not in _shown(stack, server), what="the BDM gone")
    assert stack.cinder.get(None, volume_id)["status"] == "available"
