"""The page (`mdrag ui`): a local web face over the daemon, in its own process (see serve.py)."""
