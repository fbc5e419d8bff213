"""Mutation suite of dpsco_lib: curated realistic single-line bugs (mutants.py) and their runner (run.py)."""
