"""Settings the profile tests share."""

from __future__ import annotations

# The TERM→KILL grace the profile tests give the runner: short, so hangs end quickly.
GRACE_S = 0.4
