"""`python -m cuerag`: the same command line as `cuerag`."""

from cuerag.cli.app import main

main()
