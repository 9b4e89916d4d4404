"""Write a titleless variant of an evaluation set (titles replaced by opaque ids, gold mapped the
same way) into a folder, for `cuerag eval`. The data stays out of the repository:

    .venv/bin/python benchmarks/titleless.py --questions Q.json --corpus C.json --out /tmp/titleless-musique
    cuerag eval --questions /tmp/titleless-musique/questions.json --corpus /tmp/titleless-musique/corpus.json

The files are written the same way every time, so `cuerag eval` reuses the variant's index.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cuerag.evaluation.titleless import write_titleless


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="Folder for corpus.json and questions.json.")
    parser.add_argument("--format", default="auto", choices=["auto", "hotpotqa", "2wiki", "musique", "simple"])
    args = parser.parse_args()
    out = write_titleless(args.questions, args.corpus, args.out, args.format)
    print(f"wrote {out / 'corpus.json'} and {out / 'questions.json'}")


if __name__ == "__main__":
    main()
