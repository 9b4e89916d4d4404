"""Title links: which chunks a text names by title."""

from __future__ import annotations

from cuerag.links import TitleIndex, title_keys

TITLES = [
    "Maximum Overdrive",  # 0
    "Brand (play)",  # 1
    "Leland, North Carolina",  # 2
    "Euro",  # 3
    "Aschenbrödel",  # 4
    "Lover Come Back (1961 film)",  # 5
    "Nottingham Forest F.C.",  # 6
    "Paris, Texas",  # 7
    "Texas",  # 8
    "Brand (play)",  # 9: a second chunk of the same document
    "lower-case start",  # 10: not a name
    "Charmed (season 1)",  # 11
    "Charmed",  # 12
    "1986",  # 13: a year, not a name
]


def named(index: TitleIndex, text: str, **kwargs: int | bool) -> list[list[int]]:
    return index.named_in(text, **kwargs)


def test_title_keys_drop_a_trailing_qualifier_and_skip_non_names() -> None:
    assert title_keys("Lover Come Back (1961 film)") == {
        ("Lover", "Come", "Back", "1961", "film"),
        ("Lover", "Come", "Back"),
    }
    assert title_keys("lower-case start") == set()
    assert title_keys("X") == set()
    assert title_keys("1986") == set()
    assert title_keys("1986 FIFA World Cup") == {("1986", "FIFA", "World", "Cup")}
    assert title_keys("") == set()
    assert title_keys("?!") == set()


def test_a_text_names_titles_in_order_of_first_mention() -> None:
    index = TitleIndex(TITLES)
    text = "The film Maximum Overdrive was shot in Leland, North Carolina in 1986; see Lover Come Back."
    assert named(index, text) == [[0], [2], [5]]


def test_matching_keeps_case_and_folds_accents() -> None:
    index = TitleIndex(TITLES)
    assert named(index, "He sold the brand for euros.") == []
    # The chunks of one title come as one group: a mention names one page.
    assert named(index, "The ballet Aschenbrodel and a Brand of its own, paid in Euro.") == [[4], [1, 9], [3]]


def test_a_full_title_is_named_before_one_with_a_qualifier() -> None:
    index = TitleIndex(TITLES)
    assert named(index, "She starred in Charmed for years.") == [[12]]
    assert named(index, "She starred in Charmed (season 1).") == [[12], [11]]  # both are written


def test_a_one_word_title_does_not_count_at_the_start_of_a_sentence() -> None:
    index = TitleIndex(TITLES)
    assert named(index, "Brand is a play. Euro coins exist.") == []
    assert named(index, "A play, Brand, and the Euro.") == [[1, 9], [3]]


def test_titles_do_not_run_across_sentences_but_initials_do_not_end_one() -> None:
    index = TitleIndex(TITLES)
    assert named(index, "He lived in Paris. Texas came later.") == []
    assert named(index, "He lived in Paris, Texas for years.") == [[7], [8]]
    assert named(index, "He joined Nottingham Forest F.C. Euro fans cheered.") == [[6], [3]]


def test_a_lower_case_text_matches_titles_of_two_or_more_words_without_case() -> None:
    index = TitleIndex(TITLES)
    assert named(index, "who directed maximum overdrive near brand and euro?") == [[0]]


def test_a_chunks_own_title_is_not_a_link() -> None:
    index = TitleIndex(TITLES)
    # Chunk 1's text names its own title (shared with chunk 9, the same document) and one other.
    assert named(index, "Critics compared Brand with Maximum Overdrive.", exclude_titles_of=1) == [[0]]
    assert named(index, "Nothing here names a title.") == []
    assert TitleIndex([]).named_in("Maximum Overdrive") == []


def test_a_title_shared_by_many_chunks_is_capped_per_title() -> None:
    index = TitleIndex(["Annual Report"] * 100 + ["Budget"])
    assert named(index, "See the Annual Report and the Budget.", per_title=10) == [list(range(10)), [100]]
    assert [len(g) for g in named(index, "See the Annual Report, twice: Annual Report.")] == [64]


def test_a_question_matches_a_title_written_as_a_name_without_case() -> None:
    index = TitleIndex(
        [
            "Reign of Terror",  # 0
            "Monster Trucks (film)",  # 1
            "Political party",  # 2: sentence case, a common phrase
            "Norris Mountain (Montana)",  # 3
            "The Sun (United Kingdom)",  # 4: one word besides "The"
            "Schindler's List",  # 5
            "Chiang Kai-shek",  # 6
        ]
    )
    assert named(index, "Who ruled France during the reign of terror?", loose_case=True) == [[0]]
    assert named(index, "Where is Monster trucks set, near norris mountain?", loose_case=True) == [[1], [3]]
    assert named(index, "Who directed schindler's list, and where was chiang kai-shek born?", loose_case=True) == [
        [5],
        [6],
    ]
    # Written both ways, it is one title named once.
    assert named(index, "The Reign of Terror, or the reign of terror?", loose_case=True) == [[0]]
    # A title in sentence case, or one word beside "The", is matched only as written.
    assert named(index, "Which political party won? The Political Party did.", loose_case=True) == []
    assert named(index, "He left the Political party.", loose_case=True) == [[2]]
    assert named(index, "How far is the sun? The Sun says.", loose_case=True) == [[4]]
    # Passages are edited text: without `loose_case` only what is written counts.
    assert named(index, "He wrote on the reign of terror and the Reign of Terror.") == [[0]]
    assert named(index, "He wrote on the reign of terror.") == []


def test_a_chunks_own_title_is_left_out_whatever_its_case() -> None:
    index = TitleIndex(["Flute sonata", "Flute Sonata (Prokofiev)", "Reign of Terror", "Reign of Terror"])
    # The generic page's text names the Prokofiev sonata's key only in another case.
    assert named(index, "A Flute Sonata is a sonata for flute.", exclude_titles_of=0) == []
    assert named(index, "A Flute Sonata is a sonata for flute.") == [[1]]
    assert named(index, "Of the reign of terror's two pages.", exclude_titles_of=2, loose_case=True) == []
    assert named(index, "Of the reign of terror's two pages.", loose_case=True, per_title=1) == [[2]]
