"""Benchmark loaders, one module per benchmark; each is an ordinary codea1 plugin."""
