"""The runtime's command line: one entry point per component, shared logging and signal handling.

`python -m runtime <component>` and the console scripts (`liqo-auth`, ...) all go
through `dispatch.py`, which imports the component's `main` lazily, so starting one
component never imports the others.
"""
