"""The shipped JSON Schemas of the documents in :mod:`factory.documents.registry`."""
