"""GitHub's size limits; the fitting itself is `forge/trim.py`'s.

GitHub refuses a comment over 65,536 characters (422 "Validation Failed"), a check run summary over
65,535, and drops a job summary over 1 MiB.
"""

from __future__ import annotations

from ..forge.trim import Unit, cut, fit, size

COMMENT_LIMIT = 65_536
CHECK_RUN_TEXT_LIMIT = 65_535
STEP_SUMMARY_LIMIT = 1024 * 1024

__all__ = ["CHECK_RUN_TEXT_LIMIT", "COMMENT_LIMIT", "STEP_SUMMARY_LIMIT", "Unit", "cut", "fit", "size"]
