import toolmend


def test_all_names_resolve() -> None:
    for name in toolmend.__all__:
        assert getattr(toolmend, name) is not None, name


def test_all_has_no_repeats() -> None:
    names = [n for n in toolmend.__all__ if n != "__version__"]
    assert len(set(names)) == len(names)
