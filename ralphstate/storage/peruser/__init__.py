"""The per-user records: what ralphstate keeps about loops outside the project's files."""
