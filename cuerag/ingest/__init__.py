"""Files in, documents out: the formats readers, the folder walk with its ignore rules, JSON/JSONL corpora."""
