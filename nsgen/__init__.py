"""Building blocks of generate.py: one module per step of the pipeline."""
