"""`kernelscope tui`: a Textual explorer over the store.

Four linked panes (model source | post-grad graph | kernel | wrapper): moving
the cursor in one highlights the lines it is linked to in the others. Never
imports torch: it reads only through `kernelscope.store`, and compiles go
through the warm engine worker (`kernelscope.watch`).

How it runs: a key or a message reaches the app (`app.py`), which hands it to one
controller; a controller reads the store or compiles in a thread worker and posts
the answer back as a message (`messages.py`); the app hands the message to the
controller, which changes the widgets. The UI thread only draws.

The map
-------
The shell
    app.py            KernelscopeApp: layout, keys -> actions, messages -> controllers (+ app.tcss)
    messages.py       every message a worker posts back to the UI thread
    controller.py     Controller (what each controller is) and @thread_worker

Controllers (each owns its state; the app holds one of each)
    run_loader.py     app.runs: the run on screen: load, switch, its facts after the first paint
    link_follower.py  app.links: cursor move -> one query -> linked lines in the other panes;
                      enter/u follow a link; the source pane's gutter marks; the module filter
    asm_mode.py       app.asm: below the kernel: `a` swaps the wrapper pane for SASS/PTX, `B` builds
    file_opener.py    app.files: a file opened from a list (kernel, graph break, collective)
    dialogs.py        app.dialogs: `r` `b` `m` `x` `o` `?`: the modal screens and what their choice does
    compile_status.py app.compiling: `tui TARGET [--watch]`: the compile session's events, new runs
    error_report.py   app.errors: a failed worker -> the status line; full errors kept for exit

Widgets and screens
    panes/            the code panes: CodeView (the line-API view), CodePane (its border), drawing
    kernel_list.py    the kernel list (filter, sort, enter) over kernel_table.py (the rows it draws)
    status_line.py, chain_line.py, key_footer.py   the status line, the chain line, the footer
    run_picker.py (RunPicker, DiffScreen), breaks_screen.py, module_filter.py, comm_screen.py,
    help_screen.py    the modal screens (`r`, `b`, `m`, `o`, `?`)

Headless (no textual; tested without an app)
    gateway.py        StoreGateway: every store read on one store thread; Stale requests skipped
    store_reads.py    the functions run on it: files, a run's first source file, PTX/SASS, collectives
    linking.py        a query answer -> what each pane shows and lights (LinkSet)
    run_data.py       kernel rows: columns, filter, sort; paths as shown
    compile_driver.py the compile/watch session (WatchSession) for compile_status.py
    asm_builder.py    the engine worker that compiles kernels to PTX and SASS for asm_mode.py

Where a new feature goes
    a new key         a Binding and an `action_` in app.py that calls one controller method; the
                      work in the controller it belongs to (or a new one), the key in help_screen.py
                      and docs/tui.md
    a new store read  a function in store_reads.py (the store thread), a @thread_worker method of
                      the controller that needs it, a message in messages.py, its route in app.py
    a new screen      a ModalScreen module of its own (like breaks_screen.py) that dismisses with
                      what was chosen; dialogs.py pushes it and acts on the choice
    a new pane        its role in linking.py (PANES, PANE_TITLES; what a LinkSet gives it), a
                      CodePane in app.py's compose and app.tcss; its key in PANE_KEYS
    a new behaviour of the panes on a cursor move: link_follower.py (what to ask, what to light)
"""
