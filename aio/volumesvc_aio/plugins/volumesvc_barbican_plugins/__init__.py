"""Code the all-in-one runs inside Barbican's virtualenv (never imported by volumesvc)."""
