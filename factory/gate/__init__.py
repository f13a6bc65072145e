"""The decision gate (SPEC §7): typed conditions over admitted evidence, three-valued
requirements, a stage graph, pure evaluation, compare-and-swap acceptance, and exports an
independent verifier replays. See ``design/gate.md``; the API is :mod:`factory.gate.service`.
"""
