"""What the commands do to a loop, without click, one module per use case."""
