"""API-side business logic shared by handlers (validation and orchestration)."""
