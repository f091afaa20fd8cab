"""pydftracer's module that creates the `ai` tree; here ai.py does (import path kept)."""
from .ai import *  # noqa: F401,F403
from .ai import __all__  # noqa: F401
