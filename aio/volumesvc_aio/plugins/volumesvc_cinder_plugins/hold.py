"""Paste filter (test-only): hold the answer to ``POST /attachments`` while a file exists.

Why: the resilience tests must kill cinder-api *after* it created an
attachment and *before* the caller hears about it, the window in which a
conductor loses the attachment id. The window is milliseconds in a real
Cinder; this filter widens it on demand. Without the marker file it does
nothing. Runs inside cinder-api (eventlet), so ``time.sleep`` yields.
"""

import os
import time


class HoldAttachmentCreates:
    def __init__(self, app, marker_file):
        self.app = app
        self.marker_file = marker_file

    def __call__(self, environ, start_response):
        result = self.app(environ, start_response)
        path = environ.get("PATH_INFO", "").rstrip("/")
        if environ.get("REQUEST_METHOD") == "POST" and path.endswith("/attachments"):
            while os.path.exists(self.marker_file):
                time.sleep(0.1)
        return result


def filter_factory(global_conf, **local_conf):
    marker_file = local_conf["marker_file"]
    return lambda app: HoldAttachmentCreates(app, marker_file)
