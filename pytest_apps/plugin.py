"""pytest hooks for pytest-apps (placeholder until the hooks land)."""
