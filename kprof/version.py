"""kprof's version: a leaf module, so a module below ``kprof`` reads it without importing the
package's front door (``kprof/__init__.py``). Keep in step with ``pyproject.toml``."""

__version__ = "0.1.0"
