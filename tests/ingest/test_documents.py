"""Loading documents from files: every supported form, ids, and the errors bad input gets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cuerag.errors import InputError
from cuerag.index.sync import load_paths
from cuerag.ingest.documents import Document, check_documents, content_id


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def by_title(docs: list[Document]) -> dict[str, Document]:
    return {d.title: d for d in docs}


# ---- supported forms ----------------------------------------------------------------------------


def test_json_list_of_records(tmp_path: Path) -> None:
    path = write(
        tmp_path / "corpus.json",
        json.dumps(
            [
                {"title": "Alpha", "text": "Alpha is the first letter."},
                {"id": "beta-1", "title": "Beta", "text": "Beta is the second letter."},
            ]
        ),
    )
    docs = load_paths([path])
    assert [d.title for d in docs] == ["Alpha", "Beta"]
    assert [d.text for d in docs] == ["Alpha is the first letter.", "Beta is the second letter."]
    assert docs[0].id == content_id("Alpha", "Alpha is the first letter.")
    assert docs[0].id.startswith("doc-")
    assert docs[1].id == "beta-1"


@pytest.mark.parametrize("key", ["paragraph_text", "contents"])
def test_json_records_accept_other_text_keys(tmp_path: Path, key: str) -> None:
    path = write(tmp_path / "c.json", json.dumps([{"title": "T", key: "Some text here."}]))
    (doc,) = load_paths([path])
    assert (doc.title, doc.text) == ("T", "Some text here.")


def test_json_numeric_id_kept_as_string(tmp_path: Path) -> None:
    path = write(tmp_path / "c.json", json.dumps([{"id": 17, "title": "T", "text": "x y"}]))
    assert load_paths([path])[0].id == "17"


def test_json_title_to_sentences(tmp_path: Path) -> None:
    path = write(
        tmp_path / "hotpot.json",
        json.dumps(
            {
                "Lothair II": ["Lothair II was king of Lotharingia.", " He died in 869."],
                "Teutberga": ["Teutberga was queen of Lotharingia."],
                "Plain": "A plain string value.",
            }
        ),
    )
    docs = by_title(load_paths([path]))
    assert set(docs) == {"Lothair II", "Teutberga", "Plain"}
    assert docs["Lothair II"].text == "Lothair II was king of Lotharingia. He died in 869."
    assert docs["Teutberga"].text == "Teutberga was queen of Lotharingia."
    assert docs["Plain"].text == "A plain string value."
    assert docs["Lothair II"].id == content_id("Lothair II", "Lothair II was king of Lotharingia. He died in 869.")


def test_jsonl(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": "a", "title": "A", "text": "First record."}),
        "",  # blank lines are skipped
        json.dumps({"title": "B", "text": "Second record."}),
        json.dumps({"id": "c", "title": "C", "text": ["Third ", "record."]}),
    ]
    path = write(tmp_path / "corpus.jsonl", "\n".join(lines) + "\n")
    docs = load_paths([path])
    assert [d.title for d in docs] == ["A", "B", "C"]
    assert docs[0].id == "a"
    assert docs[1].id == content_id("B", "Second record.")
    assert docs[2].id == "c"
    assert docs[2].text == "Third record."


def test_txt_file_title_is_file_name(tmp_path: Path) -> None:
    path = write(tmp_path / "river-tees.txt", "The Tees flows into the North Sea.\nIt is long.\n")
    (doc,) = load_paths([path])
    assert doc.title == "river-tees"
    assert doc.text == "The Tees flows into the North Sea.\nIt is long.\n"
    assert doc.id == doc.source == "river-tees.txt"  # a file's identity is its path under its root


def test_md_title_from_first_level_one_heading(tmp_path: Path) -> None:
    text = "Some preamble line.\n\n## Salzburg Facts\n\nSalzburg lies on the Salzach.\n\n# Later heading\n"
    (doc,) = load_paths([write(tmp_path / "notes.md", text)])
    assert doc.title == "Later heading"  # a section heading does not name the document
    # The text as a reader sees it: heading marks gone, headings on lines of their own.
    assert doc.text == "Some preamble line.\n\nSalzburg Facts\n\nSalzburg lies on the Salzach.\n\nLater heading"


def test_md_without_heading_uses_file_name(tmp_path: Path) -> None:
    (doc,) = load_paths([write(tmp_path / "vienna.md", "Vienna lies on the Danube.\n")])
    assert doc.title == "vienna"


def test_utf8_bom_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "bom.txt"
    path.write_bytes("\ufeffZürich is in Switzerland.".encode())
    (doc,) = load_paths([path])
    assert doc.text == "Zürich is in Switzerland."


def test_folder_reads_indexable_files_only(tmp_path: Path) -> None:
    write(tmp_path / "b.txt", "Bee text.")
    write(tmp_path / "sub" / "a.md", "# Aye\nAye text.")
    write(tmp_path / "c.jsonl", json.dumps({"id": "c", "title": "C", "text": "See text."}))
    write(tmp_path / "ignored.csv", "x,y\n1,2\n")
    write(tmp_path / ".hidden.txt", "hidden text")
    docs = load_paths([tmp_path])
    assert sorted(d.title for d in docs) == ["Aye", "C", "b"]
    assert all("hidden" not in d.text for d in docs)


def test_content_ids_stable_across_loads_and_distinct(tmp_path: Path) -> None:
    records = [{"title": "T", "text": "Same text."}, {"title": "T", "text": "Other text."}]
    first = load_paths([write(tmp_path / "one.json", json.dumps(records))])
    second = load_paths([write(tmp_path / "two.json", json.dumps(records))])
    assert [d.id for d in first] == [d.id for d in second]
    assert first[0].id != first[1].id  # different text, different id
    # Title is part of the identity too.
    (other_title,) = load_paths([write(tmp_path / "three.json", json.dumps([{"title": "U", "text": "Same text."}]))])
    assert other_title.id != first[0].id


def test_duplicate_ids_in_one_file_keep_the_last_version(tmp_path: Path) -> None:
    records = [{"id": "x", "title": "Old", "text": "old text"}, {"id": "x", "title": "New", "text": "new text"}]
    write(tmp_path / "a.json", json.dumps(records))
    docs = load_paths([tmp_path])
    assert [(d.id, d.text) for d in docs] == [("x", "new text")]


def test_a_second_file_may_not_take_a_document_id_over(tmp_path: Path) -> None:
    write(tmp_path / "a.json", json.dumps([{"id": "x", "title": "Old", "text": "old text"}]))
    write(tmp_path / "b.json", json.dumps([{"id": "x", "title": "New", "text": "new text"}]))
    with pytest.raises(InputError, match=r"document id 'x' is already the id of a document from .*a\.json"):
        load_paths([tmp_path])


def test_check_documents_drops_whitespace_and_refuses_empty_batch() -> None:
    good = Document(id="g", title="G", text="text")
    blank = Document(id="b", title="B", text="  \n ")
    assert check_documents([good, blank]) == [good]
    with pytest.raises(InputError, match="no document has any text"):
        check_documents([blank])


# ---- bad input ----------------------------------------------------------------------------------


def test_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(InputError, match="path not found") as err:
        load_paths([missing])
    assert "nope.json" in str(err.value)


def test_no_paths() -> None:
    with pytest.raises(InputError, match="no paths given"):
        load_paths([])


def test_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path / "empty.txt", "")
    with pytest.raises(InputError, match="empty") as err:
        load_paths([path])
    assert "empty.txt" in str(err.value)


@pytest.mark.parametrize("name", ["blank.txt", "blank.json"])
def test_whitespace_only_file(tmp_path: Path, name: str) -> None:
    path = write(tmp_path / name, "  \n\t\n   ")
    with pytest.raises(InputError, match="only whitespace") as err:
        load_paths([path])
    assert name in str(err.value)


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "image.txt"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00")
    with pytest.raises(InputError, match=r"binary \(NUL bytes\)") as err:
        load_paths([path])
    assert "image.txt" in str(err.value)


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("Caf\u00e9 au lait, tr\u00e8s bien.".encode("latin-1"))
    with pytest.raises(InputError, match="not valid UTF-8") as err:
        load_paths([path])
    assert "(byte 3)" in str(err.value)
    assert "latin1.txt" in str(err.value)


def test_malformed_json_names_line_and_column(tmp_path: Path) -> None:
    text = '[\n  {"title": "A", "text": "x"},\n  {"title": "B" "text": "y"}\n]\n'
    path = write(tmp_path / "bad.json", text)
    with pytest.raises(InputError, match="not valid JSON") as err:
        load_paths([path])
    assert "line 3, column 17" in str(err.value)
    assert "bad.json" in str(err.value)


def test_jsonl_broken_line_names_line_number(tmp_path: Path) -> None:
    lines = [
        json.dumps({"title": "A", "text": "ok"}),
        json.dumps({"title": "B", "text": "ok"}),
        "",
        '{"title": "C", "text": "unterminated',
    ]
    path = write(tmp_path / "bad.jsonl", "\n".join(lines) + "\n")
    with pytest.raises(InputError, match="line 4 is not valid JSON") as err:
        load_paths([path])
    assert "bad.jsonl" in str(err.value)


def test_record_without_text(tmp_path: Path) -> None:
    path = write(tmp_path / "c.json", json.dumps([{"title": "A", "text": "ok"}, {"title": "B", "summary": "x"}]))
    with pytest.raises(InputError, match="string 'text' field") as err:
        load_paths([path])
    message = str(err.value)
    assert "c.json[1]" in message  # the record's position
    assert "'summary'" in message  # the keys it does have


def test_jsonl_record_without_text_names_line(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl", '{"title": "A", "text": "ok"}\n{"title": "B"}\n')
    with pytest.raises(InputError, match=r"c\.jsonl:2: a record needs a string 'text' field"):
        load_paths([path])


def test_record_that_is_not_an_object(tmp_path: Path) -> None:
    path = write(tmp_path / "c.json", json.dumps([{"title": "A", "text": "ok"}, "just a string"]))
    with pytest.raises(InputError, match=r"c\.json\[1\]: expected an object .* got str"):
        load_paths([path])


def test_json_scalar_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="expected a list of records"):
        load_paths([write(tmp_path / "n.json", "42")])


def test_empty_json_list_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no documents found"):
        load_paths([write(tmp_path / "e.json", "[]")])


def test_folder_without_indexable_files(tmp_path: Path) -> None:
    write(tmp_path / "data.csv", "a,b\n")
    write(tmp_path / "image.png", "not really")
    with pytest.raises(InputError, match="no indexable files") as err:
        load_paths([tmp_path])
    assert ".jsonl" in str(err.value)  # it says which suffixes it looks for


def test_a_bad_file_in_a_folder_stops_the_load(tmp_path: Path) -> None:
    write(tmp_path / "a.json", json.dumps([{"title": "A", "text": "fine"}]))
    write(tmp_path / "b.jsonl", json.dumps({"title": "B", "text": "fine"}) + "\n{not json\n")
    with pytest.raises(InputError, match=r"b\.jsonl: line 2 is not valid JSON"):
        load_paths([tmp_path])


# ---- engine bugs found while writing these tests ------------------------------------------------


def test_jsonl_string_with_unicode_line_separator(tmp_path: Path) -> None:
    record = {"id": "a", "title": "A", "text": "first part\u2028second part"}
    path = write(tmp_path / "u.jsonl", json.dumps(record, ensure_ascii=False) + "\n")
    (doc,) = load_paths([path])
    assert doc.text == "first part\u2028second part"


def test_uppercase_jsonl_suffix(tmp_path: Path) -> None:
    path = write(tmp_path / "CORPUS.JSONL", '{"title": "A", "text": "a"}\n{"title": "B", "text": "b"}\n')
    assert [d.title for d in load_paths([path])] == ["A", "B"]


def test_uppercase_md_suffix_title(tmp_path: Path) -> None:
    (doc,) = load_paths([write(tmp_path / "NOTES.MD", "# Real Title\nBody text.\n")])
    assert doc.title == "Real Title"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("long.json", '[{"title": "t", "text": "x", "n": ' + "1" * 5000 + "}]"),
        ("long.jsonl", '{"text": "x", "n": ' + "9" * 5000 + "}\n"),
    ],
)
def test_a_number_too_long_to_read_is_refused_clearly(tmp_path: Path, name: str, text: str) -> None:
    # Valid JSON that Python's json refuses with a bare ValueError (its 4300-digit limit).
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError, match="number too long"):
        load_paths([path])


def test_a_number_too_long_to_read_in_a_walked_folder_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text('{"seed": ' + "7" * 5000 + "}")
    (tmp_path / "a.md").write_text("# Alpha\n\nAlpha is read.")
    assert [d.title for d in load_paths([tmp_path])] == ["Alpha"]
