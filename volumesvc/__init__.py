"""volumesvc: a Nova-compatible compute service for the instance/volume lifecycle."""
