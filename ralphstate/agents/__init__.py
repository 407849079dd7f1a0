"""What each agent is: one module per agent behind one contract, and one table of them."""
