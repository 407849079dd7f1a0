"""Processes, scratch space and the file system's primitives every other room uses."""
