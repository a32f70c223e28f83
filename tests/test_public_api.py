"""The package's public surface: what ``import benchctl`` offers, each name resolving on first use."""

import pytest

import benchctl


def test_dir_lists_the_public_names_and_each_resolves():
    names = dir(benchctl)
    assert names == sorted(benchctl.__all__)
    assert not {"importlib", "Any", "annotations"} & set(names), "this file's own imports are not the API"
    assert not [n for n in names if n.startswith("_") and n != "__version__"]
    for name in names:
        assert getattr(benchctl, name) is not None, name


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="module 'benchctl' has no attribute 'time_it'"):
        benchctl.time_it  # noqa: B018
