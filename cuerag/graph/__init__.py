"""What is stored and the snapshot read back: the payload schema, point ids, the in-memory graph,
citations, document listings and text."""
