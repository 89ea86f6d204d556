"""The digits split is kept in dfcore's cache directory: what is read back is scikit-learn's split, bit for bit, and a
damaged or unwritable cache costs only the time to split again."""

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from dfcore.models import digits


def sklearn_split(test_fraction, seed):
    """The reference: scikit-learn's stratified split of the digits, scaled to [0, 1] as float32."""
    data = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        (data.data / 16.0).astype(np.float32), data.target.astype(np.int64), test_size=test_fraction,
        random_state=seed, stratify=data.target)
    return x_train, y_train, x_test, y_test


def assert_split_equal(split, reference):
    for name, expected in zip(("x_train", "y_train", "x_test", "y_test"), reference):
        actual = getattr(split, name)
        assert actual.dtype == expected.dtype, name
        np.testing.assert_array_equal(actual, expected, err_msg=name)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(digits.CACHE_DIR_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def forbid_splitting(monkeypatch):
    def split_again(*args):
        raise AssertionError("split with scikit-learn again instead of reading the cache")
    monkeypatch.setattr(digits, "_split_with_sklearn", split_again)


def test_the_first_split_is_written_and_later_ones_read_back_bit_for_bit(cache, monkeypatch):
    reference = sklearn_split(0.25, 3)
    assert_split_equal(digits.load_digits_split(0.25, 3), reference)
    (stored,) = cache.iterdir()
    assert stored.suffix == ".npz" and "seed3" in stored.name and "test0.25" in stored.name
    forbid_splitting(monkeypatch)
    assert_split_equal(digits.load_digits_split(0.25, 3), reference)


def test_other_arguments_get_their_own_file(cache):
    first, second = digits.load_digits_split(0.2, 0), digits.load_digits_split(0.2, 1)
    assert len(list(cache.iterdir())) == 2
    assert not np.array_equal(first.y_test, second.y_test)


@pytest.mark.parametrize("damage", [b"", b"not a zip file", "truncated"])
def test_a_damaged_file_is_split_again_and_replaced(cache, monkeypatch, damage):
    reference = sklearn_split(0.2, 0)
    digits.load_digits_split(0.2, 0)
    (stored,) = cache.iterdir()
    stored.write_bytes(stored.read_bytes()[:1000] if damage == "truncated" else damage)
    assert_split_equal(digits.load_digits_split(0.2, 0), reference)
    forbid_splitting(monkeypatch)
    assert_split_equal(digits.load_digits_split(0.2, 0), reference)


def test_a_file_missing_an_array_or_of_another_dtype_is_not_used(cache):
    reference = sklearn_split(0.2, 0)
    digits.load_digits_split(0.2, 0)
    (stored,) = cache.iterdir()
    for arrays in ({"x_train": reference[0]},
                   dict(zip(("x_train", "y_train", "x_test", "y_test"), (a.astype(np.float64) for a in reference)))):
        with stored.open("wb") as file:
            np.savez(file, **arrays)
        assert_split_equal(digits.load_digits_split(0.2, 0), reference)


def test_an_unwritable_cache_directory_still_gives_the_split(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("the cache directory cannot be created below a file")
    monkeypatch.setenv(digits.CACHE_DIR_ENV, str(blocker / "cache"))
    assert_split_equal(digits.load_digits_split(0.2, 0), sklearn_split(0.2, 0))
    assert list(tmp_path.iterdir()) == [blocker]


def test_the_cache_directory_follows_dfcore_then_xdg_then_home(tmp_path, monkeypatch):
    monkeypatch.delenv(digits.CACHE_DIR_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert digits.cache_dir() == tmp_path / "home" / ".cache" / "dfcore"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert digits.cache_dir() == tmp_path / "xdg" / "dfcore"
    monkeypatch.setenv(digits.CACHE_DIR_ENV, str(tmp_path / "mine"))
    assert digits.cache_dir() == tmp_path / "mine"


def test_without_a_home_directory_the_split_is_still_made(tmp_path, monkeypatch):
    def no_home():
        raise RuntimeError("Could not determine home directory.")
    monkeypatch.delenv(digits.CACHE_DIR_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(digits.pathlib.Path, "home", staticmethod(no_home))
    with pytest.raises(RuntimeError):
        digits.cache_dir()
    assert_split_equal(digits.load_digits_split(0.2, 0), sklearn_split(0.2, 0))
