"""Answers as text, worded once for every front end (the CLI, the language server's
hovers, the terminal UI, the VS Code run overview). Plain functions over the store's
read-model results; nothing here imports torch or opens a store."""
