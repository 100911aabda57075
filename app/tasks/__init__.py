"""What the models compute for the applets, as plain results (no HTTP): GPT sampling, BERT fill / NSP."""
