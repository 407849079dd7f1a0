"""`ralphstate install` and `ralphstate doctor`: the hooks in each agent's files."""
