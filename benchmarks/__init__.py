"""Benchmarks and the commands that print the README's tables (not installed with the app)."""
