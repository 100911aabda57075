"""Training side of Pretraining Playground: corpus -> tokenizer -> GPT/BERT -> ONNX in models/."""
