"""Front ends read the store; the language server lands with its own issue."""
