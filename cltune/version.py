"""The package version, importable without loading the runtime."""

__version__ = "0.1.0"
