"""The pipeline (SPEC X-1): agent receipt → review → decision gate → operator publication.

``factory publish`` runs the decision gate for an agent receipt's candidate
(:mod:`~factory.pipeline.gatestep`) and, only once the gate accepts, hands over to the
operator's terminal authorization; :mod:`~factory.pipeline.binding` is how any
publication finds and binds its accepted gate run; :mod:`~factory.pipeline.deep` checks
the whole chain offline (``factory operator verify --deep``). See ``design/pipeline.md``.
"""
