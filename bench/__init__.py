"""Benchmarks and retrieval evaluation for mdrag, each runnable with one command."""
