"""Spark integration tests (marker ``spark``) and the pure-Python logic of the Spark stages."""
