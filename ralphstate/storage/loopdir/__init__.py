"""The loop's own files in `.loop/`: the state file with its history, and the lessons."""
