"""CUE-Index: documents to stored points (chunks, units, entities), the run plan, the knapsack, LLM extraction."""
