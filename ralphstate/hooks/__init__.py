"""The hook process and a module per hook."""
