"""pytest-apps: the APPS coding benchmark as pytest tests."""

__version__ = "0.1.0"
