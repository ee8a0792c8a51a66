"""Old name of ``zocrates_nb.credentials``, kept until cli.py, status.py and workbench.py import the new one.

Why it goes: a module named ``secrets`` inside the package reads as the standard library's ``secrets``.
Delete this file once nothing imports ``zocrates_nb.secrets``.
"""

from __future__ import annotations

from zocrates_nb.credentials import (
    REDACTED,
    api_key_source,
    clear_api_key,
    get_api_key,
    redact,
    store_api_key,
)

__all__ = ["REDACTED", "api_key_source", "clear_api_key", "get_api_key", "redact", "store_api_key"]
