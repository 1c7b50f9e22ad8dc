"""Hostile inputs, options, signals and restarts through the command line."""
