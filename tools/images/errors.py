"""The one error of the image builder: what cannot be built, and what to do about it."""


class BuildError(Exception):
    """An image cannot be built; the message says why and what to do."""
