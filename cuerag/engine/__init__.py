"""The engine's front door (`CueRag`) and what runs on top of it (watch)."""
