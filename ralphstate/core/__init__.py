"""Pure rules and words: the state, the Stop decision, the text people and models read."""
