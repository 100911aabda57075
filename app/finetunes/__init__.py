"""Fine-tune jobs: the lab of issue 19 (app/routers/finetunes.py serves them)."""
