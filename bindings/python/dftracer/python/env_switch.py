"""Capture sources that are on by default and turned off by a variable."""
from __future__ import annotations

import os


def on_unless_off(name: str) -> bool:
    """False when the variable is ``0``, ``false``, ``no`` or ``off`` (any case); True otherwise, unset included."""
    value = os.environ.get(name)
    return value is None or value.strip().lower() not in ("0", "false", "no", "off")
