"""Retrieval over one snapshot: the stepwise primitives, Q-Iter, scoring, the lexical channel,
links, filters, the baselines and explanations."""
