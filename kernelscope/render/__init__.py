"""Front-end-neutral rendering of what the store answers: text (what the CLI prints
and a Python API object's `repr`), the fusion picture as SVG (the VS Code overview
and Jupyter) and HTML for Jupyter. Never imports torch, rich or an editor's library:
every front end can use it."""
