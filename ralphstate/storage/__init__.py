"""Files, locks, git and child processes: everything that touches the disk or starts a process."""
