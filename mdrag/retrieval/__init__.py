"""Retrieval: the read features, answered from the index (search and its score, similar, related, context)."""
