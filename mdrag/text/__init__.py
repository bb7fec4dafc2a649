"""Text: how a word is written, so it matches however a system or a script wrote it."""
