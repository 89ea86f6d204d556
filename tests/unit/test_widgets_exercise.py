"""The exercise checker: what it says on a miss (field, direction, count) never includes the expected value,
until reveal=True or reveal_after misses."""

import numpy as np
import pytest

from widgets import Exercise, Requirement
from widgets.exercise import problems

EXPECTED = {"data_pairs": 3, "ops": {"v", "k", "w", "q"}, "where": {"p_var": "GPU:3", "p_add": "GPU:3"}}


def test_not_done_yet_counts_no_miss(capsys):
    exercise = Exercise("Exercise 1")
    exercise.check({"data_pairs": None}, EXPECTED)
    assert not exercise.solved
    assert capsys.readouterr().out == "Exercise 1 is not done yet.\n" and exercise.misses == 0


def test_right_answer(capsys):
    exercise = Exercise("Exercise 1")
    assert exercise.check({"data_pairs": 3.0, "ops": {"q", "w", "k", "v"}, "where": dict(EXPECTED["where"])},
                          EXPECTED) is None
    assert exercise.solved
    assert capsys.readouterr().out == "Exercise 1: correct.\n"


def test_first_miss_names_what_is_wrong_without_the_expected_values(capsys):
    exercise = Exercise("Exercise 1", reveal_after=3)
    answers = {"data_pairs": 5, "ops": {"v", "w", "q", "u", "z"}, "where": {"p_var": "GPU:3", "p_add": "GPU:9"}}
    exercise.check(answers, EXPECTED, hint="read the placement log")
    assert not exercise.solved
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "Exercise 1: not yet (miss 1).",
        "  - `data_pairs` is too high",
        "  - `ops` has 2 items that should not be there and misses 1 item",
        "  - `where['p_add']` is not right",
        "  Hint: read the placement log",
        "  The expected values are shown after 2 more misses, or now with reveal=True.",
    ]
    assert "GPU:3" not in out and "Expected" not in out


def test_reveals_after_n_misses_and_on_request(capsys):
    exercise = Exercise("Exercise 2", reveal_after=2)
    exercise.check({"data_pairs": 1}, {"data_pairs": 3})
    first = capsys.readouterr().out
    assert "too low" in first and "Expected" not in first and "after 1 more miss," in first
    exercise.check({"data_pairs": 2}, {"data_pairs": 3})
    assert capsys.readouterr().out.splitlines()[-1] == "  Expected data_pairs = 3"
    fresh = Exercise("Exercise 3")
    fresh.check({"data_pairs": 7}, {"data_pairs": 3}, reveal=True)
    assert "Expected data_pairs = 3" in capsys.readouterr().out and fresh.misses == 1


def test_requirements_print_the_problem_and_reveal_one_answer(capsys):
    exercise = Exercise("Exercise 2", reveal_after=1)
    slow = Requirement(False, "some products still wait for each other", "one product per GPU")
    exercise.check({"four_devices": ["/gpu:0"] * 4}, requirements=[slow])
    assert not exercise.solved
    out = capsys.readouterr().out
    assert "  - some products still wait for each other" in out and "  One answer: one product per GPU" in out
    exercise.check({"four_devices": ["/gpu:0"]}, requirements=[Requirement(True, "x", "y")])
    assert exercise.solved and capsys.readouterr().out.endswith("Exercise 2: correct.\n")


@pytest.mark.parametrize("got, expected, lines", [
    (0.5000001, 0.5, []),
    (0.6, 0.5, ["`x` is too high"]),
    (True, False, ["`x` is not right"]),
    ([1, 2], [1, 2, 3], ["`x` has 2 items, which is not the right number"]),
    ([1, 5, 3], [1, 2, 3], ["`x[1]` is too high"]),
    ({"a": 1}, {"b": 1}, ["`x` has no key 'b'", "`x` has a key 'a' that should not be there"]),
    (np.zeros((2, 3)), np.zeros((3, 2)), ["`x` has shape (2, 3), which is not the right shape"]),
    (np.array([1.0, 2.0, 4.0]), np.array([1.0, 2.0, 3.0]), ["`x`: 1 of 3 elements are wrong"]),
    ("GPU:0", "GPU:1", ["`x` is not right"]),
])
def test_problems_by_kind_of_answer(got, expected, lines):
    assert problems("x", got, expected) == lines


def test_reveal_after_must_be_positive():
    with pytest.raises(ValueError, match="reveal_after"):
        Exercise("Exercise 1", reveal_after=0)
