"""Answers: the shapes of what the operations answer, as they cross the socket (JSON objects).

Declared once here, in the base, so that the modules that build an answer (the searcher, the
service, the daemon) and those that read one (the client, the CLI, the page, the MCP server)
name the same keys. A search process imports them for the type checker only: building these
classes costs it ~3 ms.
"""
