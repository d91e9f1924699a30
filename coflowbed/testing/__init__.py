"""The pytest plugin for users (``pytest_plugin``): fixtures that run a scenario emulated
or simulated and return typed results."""
