"""The state vocabularies the API, conductor, compute and objects share.

``vm_states``, ``task_states`` and ``attach_states`` sit here, below
``objects/`` and ``quota.py``, so that spelling a state never means importing
the compute package. Nothing in this package imports ``compute/``,
``conductor/`` or ``api/`` (``tests/unit/test_house_rules.py`` holds it to
that).
"""
