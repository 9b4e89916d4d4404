"""Chat LLMs behind one interface, their response cache, reading JSON from their answers, secrets kept out of logs."""
