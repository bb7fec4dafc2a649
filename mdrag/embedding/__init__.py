"""Embedding: the model, its runtimes (torch, ONNX) and what a model run may cost (cores, memory)."""
