"""Client: what the fronts (the CLI, the page, the MCP server) share to reach the index."""
