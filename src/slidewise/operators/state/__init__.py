"""The state of the plan path's incremental operators: row stores per strategy and the calendar queue."""
