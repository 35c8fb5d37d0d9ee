"""tauproxy's version: in its own module so that every layer can name it without importing the package's
public API (tauproxy/__init__.py re-exports that, lazily)."""

__version__ = "0.1.0"
