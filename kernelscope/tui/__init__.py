"""`kernelscope tui`: a Textual explorer over the store.

Four linked panes (model source | post-grad graph | kernel | wrapper): moving
the cursor in one highlights the lines it is linked to in the others. Never
imports torch: it reads only through `kernelscope.store`, and compiles go
through the warm engine worker (`kernelscope.watch`). Headless modules
(`gateway`, `linking`, `run_data`, `compile_driver`) do not import textual.
"""
