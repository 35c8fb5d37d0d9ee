"""tauproxy: evaluate tool-using agents the tau2-bench way, and never pay twice for a model call.

Importing this package is cheap on purpose: litellm (about 5 s to import) loads only when a live
call is made, so replay and reports never pay for it.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
