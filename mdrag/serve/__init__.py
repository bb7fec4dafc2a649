"""Serve: the daemon: its socket server, its one writer thread, and how it shows its health to systemd."""
