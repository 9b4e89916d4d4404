"""How well the community hierarchy recovers a documentation set's own grouping (issue 32).

    python benchmarks/theme_recovery.py DATA_DIR CORPUS_JSON GLOBAL_QUESTIONS_JSON

Reads the index `cuerag eval` built for CORPUS_JSON in DATA_DIR (run the eval first), builds the
document hierarchy in memory (timed), and scores it against the themes of the global question
file (each question's gold pages form one theme; themes may overlap):

* best-match F1: for each theme, the best F1 of any community's document set (any level), averaged;
* NMI (and adjusted Rand) between the leaf partition and the themes, over the documents that
  belong to exactly one theme (a partition needs one label per document).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from cuerag.config import Settings
from cuerag.engine.facade import CueRag
from cuerag.evaluation.questions import load_questions
from cuerag.evaluation.runner import corpus_name_for
from cuerag.index.sync import load_paths


def main() -> None:
    data_dir, corpus_file, questions_file = (Path(a) for a in sys.argv[1:4])
    engine = CueRag(Settings(data_dir=data_dir, read_only=True))
    questions = load_questions(questions_file, load_paths([corpus_file]))
    retriever = engine.retriever(corpus_name_for(corpus_file))
    index = engine.communities(retriever.corpus)
    started = time.perf_counter()
    hierarchy = index.hierarchy
    built = time.perf_counter() - started
    started = time.perf_counter()
    _ = index.reports
    reported = time.perf_counter() - started
    ids = index.docs.doc_ids
    communities = [{ids[m] for m in c.members} for c in hierarchy.communities.values()]
    f1s = []
    for q in questions:
        gold = set(q.gold_doc_ids)
        best = 0.0
        for members in communities:
            inter = len(gold & members)
            if inter:
                best = max(best, 2 * inter / (len(gold) + len(members)))
        f1s.append(best)
    theme_of: dict[str, list[int]] = {}
    for t, q in enumerate(questions):
        for d in q.gold_doc_ids:
            theme_of.setdefault(d, []).append(t)
    leaf = {ids[m]: c for c, x in enumerate(hierarchy.leaves()) for m in x.members}
    top = {ids[m]: c for c, x in enumerate(hierarchy.level(0)) for m in x.members}
    single = sorted(d for d, ts in theme_of.items() if len(ts) == 1)
    truth = [theme_of[d][0] for d in single]
    levels = {level: len(hierarchy.level(level)) for level in range(hierarchy.depth)}
    print(f"documents {len(ids)}; communities per level {levels}; leaves {len(hierarchy.leaves())}")
    print(
        f"hierarchy build {built + index.build_seconds.get('docs', 0) + index.build_seconds.get('tfidf', 0):.2f} s"
        f" (parts: {index.build_seconds}); reports {reported:.2f} s"
    )
    print(f"best-match F1 (theme -> best community, mean over {len(f1s)} themes): {sum(f1s) / len(f1s):.3f}")
    for name, labels in (("leaves", leaf), ("level 0", top)):
        pred = [labels[d] for d in single]
        print(
            f"{name}: NMI {normalized_mutual_info_score(truth, pred):.3f}, ARI {adjusted_rand_score(truth, pred):.3f}"
            f" over {len(single)} single-theme documents"
        )


if __name__ == "__main__":
    main()
