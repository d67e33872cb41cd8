"""The four linked code panes (model source | post-grad graph | kernel | wrapper)."""
