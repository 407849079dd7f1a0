"""The click commands, a module per command, loaded lazily; the only importer of click."""
