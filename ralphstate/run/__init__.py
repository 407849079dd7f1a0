"""`ralphstate run` and `ralphstate watch`: a fresh agent process per iteration."""
