"""Pretraining Playground inference server: a tiny GPT and BERT (ONNX) behind a FastAPI app.

Serving needs numpy and onnxruntime only; this package never imports torch or `training`."""

__version__ = "0.1.0"
