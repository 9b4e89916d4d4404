"""The models behind small interfaces (embedder, reranker, NER), their implementations and loading."""
