"""What the project's own tests need: pytester, and where the shared APPS data lives."""

pytest_plugins = ["pytester"]
