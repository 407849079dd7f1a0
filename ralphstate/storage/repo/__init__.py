"""The project's git repository: what git says, the guarded files, the clean room."""
