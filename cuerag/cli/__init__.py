"""The `cuerag` command line."""
