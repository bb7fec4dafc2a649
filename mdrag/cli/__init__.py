"""CLI: the fronts (commands, MCP) and how they reach the index: the daemon, else opened here."""
