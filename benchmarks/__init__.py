"""Benchmarks and the commands that print the tables of docs/ (not installed with the app)."""
