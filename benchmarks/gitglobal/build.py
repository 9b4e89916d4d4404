"""Build the Git global (broad) question set: gold = every corpus page the manual files under a theme.

    apt-get install git-doc
    python benchmarks/gitdocs/build.py gitdocs-set          # the 198-page corpus (not committed)
    python benchmarks/gitglobal/build.py gitdocs-set        # writes gitdocs-set/global_questions.json

Membership is never a judgement call, as for the SQLite global set:

* the categories of `git.html`'s command list (the manual's own table of contents): each `<h3>`
  (or `<h2>` with its own list) heading's `<dt>` links, the "Ancillary Commands" list split at its
  "Manipulators:" / "Interrogators:" labels; links matched by path to the corpus (pages not in the
  corpus, e.g. `git-log.html` and `git-config.html`, which the corpus drops as too long, fall out);
* file-name families (a regular expression over the page's path).

Themes with fewer than 3 corpus pages are dropped. The questions (below) were written by hand per
theme, describing its scope without naming member pages or quoting the heading. The committed
`questions.json` beside this script is this script's output for the corpus that
`benchmarks/gitdocs/build.py` writes from git-doc 1:2.39.5-0+deb12u3.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import lxml.html

SRC = Path("/usr/share/doc/git-doc/git.html")
HERE = Path(__file__).resolve().parent
MIN_GOLD = 3

# theme key -> question. A key is either "toc:<heading>[:<label>]" or "files:<regex over path>".
QUESTIONS: dict[str, str] = {
    "toc:Main porcelain commands": (
        "Which everyday commands does Git give a user for the day-to-day work of recording changes, "
        "branching, merging, rewriting history, sharing work with others and looking at what happened?"
    ),
    "toc:Ancillary Commands:Manipulators": (
        "Besides the everyday commands, what auxiliary tools does Git offer for changing a repository's "
        "state in bulk: exporting and importing history as a stream, rewriting it wholesale, cleaning up "
        "and compacting stored objects and refs, managing remotes and substituting objects?"
    ),
    "toc:Ancillary Commands:Interrogators": (
        "What auxiliary tools does Git have for inquiring about a repository rather than changing it: "
        "finding who last changed a line, checking integrity and signatures, counting storage, browsing "
        "it on the web, comparing with an external viewer, or reporting a problem to the developers?"
    ),
    "toc:Interacting with Others": (
        "How does Git exchange history with other version control systems and with people who do not use "
        "Git hosting: importing from or exporting to older systems, serving their clients, and sending "
        "patches by e-mail?"
    ),
    "toc:Manipulation commands": (
        "Which low-level building blocks write to Git's object database and index directly: creating "
        "objects, trees, commits and tags by hand, packing and unpacking objects, and updating refs?"
    ),
    "toc:Interrogation commands": (
        "Which low-level commands are meant for scripts that need to read a repository: listing files, "
        "trees, refs and revisions, printing object contents, comparing trees and the index, and checking "
        "packs?"
    ),
    "toc:Syncing repositories": (
        "What server-side and transport programs move objects between repositories: the daemons and "
        "smart HTTP endpoints, the programs on each side of a fetch or push, and restricted login shells?"
    ),
    "toc:Internal helper commands": (
        "Which small helper commands do other Git commands call internally, such as checking attributes "
        "and ignore rules, handling credentials, parsing and splitting mail, formatting merge messages "
        "and trailers, or tidying text?"
    ),
    "toc:Guides": (
        "Which tutorials and conceptual guides explain Git to a learner: first steps, everyday use, "
        "recommended workflows, a glossary, frequently asked questions, and how concepts such as "
        "submodules, namespaces and credentials work?"
    ),
    "toc:Repository, command and file interfaces": (
        "Which documents describe the files and conventions a Git user configures or relies on: per-path "
        "attributes, ignore rules, hooks, name mapping, submodule configuration, how revisions are "
        "named, command-line conventions and how a repository is laid out on disk?"
    ),
    "toc:File formats, protocols and other developer interfaces": (
        "For someone implementing Git-compatible software, which documents specify its on-disk formats "
        "and network protocols: the index, packs, bundles, commit graphs, signatures and the wire "
        "protocol with its capabilities?"
    ),
    "files:credential": (
        "How does Git obtain, remember and hand over usernames and passwords, and which helpers can "
        "cache or store them?"
    ),
    "files:^git-diff|difftool|diffcore": (
        "What ways does Git offer to show differences between versions, between the index and the working "
        "tree, or between trees, and how can the output be tuned or shown in an external tool?"
    ),
    "files:^git-merge|mergetool": (
        "What does Git provide for combining lines of development: joining histories, finding their common "
        "ancestor, merging single files, and resolving conflicts with a tool?"
    ),
    "files:cvs|svn": (
        "How can a team that still uses CVS or Subversion work with Git, migrate to it, or let their old "
        "clients talk to a Git repository?"
    ),
}


def toc_sections(path: Path) -> dict[str, list[str]]:
    """`git.html`'s command lists: heading (plus ':' label inside the section) -> linked paths."""
    root = lxml.html.fromstring(path.read_bytes())
    out: dict[str, list[str]] = {}
    heading = None
    label = ""
    for el in root.iter("h2", "h3", "p", "dt"):
        if el.tag in ("h2", "h3"):
            heading, label = " ".join(el.text_content().split()), ""
        elif el.tag == "p":
            text = " ".join(el.text_content().split())
            if text.endswith(":") and len(text) < 40 and el.getparent().tag != "dd":
                label = text[:-1]
        elif heading is not None:
            for a in el.iter("a"):
                href = (a.get("href") or "").split("#")[0]
                if href and "/" not in href and ":" not in href:
                    key = f"{heading}:{label}" if label else heading
                    out.setdefault(key, [])
                    if href not in out[key]:
                        out[key].append(href)
    return out


def build(set_dir: Path) -> list[dict[str, object]]:
    corpus = json.loads((set_dir / "corpus.json").read_text())
    title_of = {d["path"]: d["title"] for d in corpus}
    sections = toc_sections(SRC)
    questions = []
    for key, question in QUESTIONS.items():
        kind, _, rule = key.partition(":")
        if kind == "toc":
            paths = [p for p in sections.get(rule, []) if p in title_of]
            source = f"git.html: {rule}"
        else:
            pattern = re.compile(rule)
            paths = sorted(p for p in title_of if pattern.search(p))
            source = f"file names: /{rule}/"
        if len(paths) < MIN_GOLD:
            print(f"dropped {key}: {len(paths)} pages", file=sys.stderr)
            continue
        questions.append(
            {"question": question, "gold_titles": [title_of[p] for p in paths], "theme": source, "type": "global"}
        )
    return questions


def main() -> None:
    if not SRC.is_file():
        sys.exit(f"{SRC} is missing: install the Debian package git-doc (apt-get install git-doc)")
    set_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "gitdocs-set")
    questions = build(set_dir)
    text = json.dumps(questions, ensure_ascii=False, indent=1) + "\n"
    (set_dir / "global_questions.json").write_text(text)
    (HERE / "questions.json").write_text(text)
    sizes = sorted(len(q["gold_titles"]) for q in questions)  # type: ignore[arg-type]
    print(f"{len(questions)} questions; gold sizes {sizes}")


if __name__ == "__main__":
    main()
