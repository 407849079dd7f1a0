"""ralphstate: keeps autonomous coding-agent loops honest and resumable."""

__version__ = "0.1.0"
