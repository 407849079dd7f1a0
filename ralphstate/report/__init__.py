"""The loop's story and its renderings."""
