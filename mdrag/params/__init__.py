"""Params: what a request may ask for, its limits and its validation, parsed once where it comes in."""
