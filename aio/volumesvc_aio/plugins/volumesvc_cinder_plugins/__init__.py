"""Test-only extensions loaded by a real Cinder started by volumesvc_aio.cinder.

Runs inside Cinder's virtualenv; volumesvc never imports this package.
"""
