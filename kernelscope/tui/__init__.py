"""Front ends read the store; the terminal UI lands with its own issue."""
