"""Review authority mirrored as git refs (SPEC M-4; issue 23 §2): transport, not authority.

Each approved lineage (and every predecessor its recovery chain names) is one commit under
``refs/factory/review/v1/<lineage-id>`` whose tree holds exactly what the store holds for
it: ``review-state.json``, ``review-receipt.json`` and the evidence blobs the state binds.
The commit's bytes are a function of that tree alone, so two clones mirroring the same
lineage make the same commit, and a ref is created once and never moved
(:mod:`.objects`, :mod:`.sync`). Reading a mirror writes those files into a temporary
folder in the store's own layout and hands it to the same
:class:`~factory.review.store.ReviewStore` and gate code the local store uses
(:mod:`.fromrefs`): there is no second validator.
"""
