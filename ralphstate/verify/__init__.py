"""Running checks and recording their evidence."""
