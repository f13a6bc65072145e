"""``factory demo``: the agent cycle end to end on a sample repository, on the rehearsal
route (real CLIs, scripted loopback model)."""
