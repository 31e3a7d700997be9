"""Built-in reporter plugins, one module per format."""
