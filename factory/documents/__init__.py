"""Documents factory prints or writes: the one stdout emitter (stdlib only)."""
