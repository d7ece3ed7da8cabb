"""Our layer over `tf`: what every resource needs and tf does not give, in one place.

| module | job |
| --- | --- |
| `schema.py` | attributes with every flag (write-only, plan modifiers), nested attributes, single nested blocks |
| `plan.py` | planning as the plugin framework does it (unknown computed values, keep-prior, replace paths) |
| `servicer.py` | tf's tfplugin6 servicer with planning, apply contexts, stop and errors fixed |
| `resource.py` | bases of resources and data sources; `call` runs cluster work bounded, errors as diagnostics |
| `timeouts.py`, `waits.py` | the `timeouts` block and bounded, stoppable waits |
| `diagnostics.py` | failures worded for the person running Terraform |
"""
