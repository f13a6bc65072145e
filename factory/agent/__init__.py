"""The agent factory run (SPEC §4): worker → candidate identity → read-only review → one
repair → fresh review, with evidence and a receipt."""
