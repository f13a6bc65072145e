"""The closed provider profiles (SPEC P-2): ``claude`` and ``codex``. Nothing else."""
