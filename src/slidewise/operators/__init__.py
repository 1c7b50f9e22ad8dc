"""Stream operators; one module per algorithm family."""
