"""The four linked code panes (model source | post-grad graph | kernel | wrapper), and
the fifth, PTX/SASS, shown in the wrapper pane's place.

    code_pane.py   CodePane: the bordered pane; its title names the file shown
    code_view.py   CodeView: the read-only line-API view: cursor, linked lines, gutter marks;
                   posts CursorMoved and FollowRequested (the app's link follower answers)
    shown_file.py  a file as a view shows it: lines and drawn rows, cached (RecentFiles)
    syntax.py      Python highlighting one line at a time, on demand

A new way to draw a line goes in code_view.py (its row) and shown_file.py (its cache);
what the panes show on a cursor move is not here but in ../link_follower.py.
"""
