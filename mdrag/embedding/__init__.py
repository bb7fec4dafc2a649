"""Embedding: the model, its runtimes (torch, ONNX) and what a model run may cost (cores, memory)."""

import os

# ONNX Runtime (since 1.29, on Linux and macOS too) starts telemetry as it loads: a device id and
# an event store under ~/.cache/Microsoft/DeveloperTools/.onnxruntime, uploaded to Microsoft when
# the network allows. mdrag sends nothing off the machine, so it is switched off here, before any
# module of this wing (the only one that imports onnxruntime) loads it; the library reads the
# variable once, as it initialises, and the processes mdrag starts (the ONNX export) inherit it.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
