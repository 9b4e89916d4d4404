"""Text handling below the graph: token counts, sentences, the chunk model and chunking, entity names, casing."""
