"""The version of the runtime distribution, the one place it is written.

`tools/dist.py` stamps it into every wheel the repository builds, the development
install (`make venv`) reads it too (pyproject.toml), and `runtime.api.image` tags the
runtime image with it. A constant rather than the installed metadata: the runtime knows
its version the same way installed from its wheel, in the image, or from a checkout.
"""

VERSION = "0.1.0"
