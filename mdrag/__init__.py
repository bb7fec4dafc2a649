"""mdrag: local semantic search for markdown notes, kept fresh by a daemon."""

__version__ = "0.1.0"
