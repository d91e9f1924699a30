"""The strict reader's help with typos: an unknown key close to a known one is named
with "did you mean", also when the typo's default (or the missing required key) would
have been reported as another error; a whole float is an integer."""

from __future__ import annotations

import pytest

from workload.schema import Section, SpecError, check_int, did_you_mean, typos_first


def test_did_you_mean_only_for_a_close_word():
    assert did_you_mean("timout_s", ["timeout_s", "seed"]) == "; did you mean 'timeout_s'?"
    assert did_you_mean("colour", ["timeout_s", "seed"]) == ""


def test_done_names_the_close_known_key_or_lists_them():
    sec = Section({"levles": 2}, "f.yaml")
    sec.int("levels", 8)
    says = r"^f.yaml: levles: unknown key \(did you mean 'levels'\?\)$"
    with pytest.raises(SpecError, match=says):
        sec.done()
    far = Section({"colour": 1}, "f.yaml")
    far.int("levels", 8)
    with pytest.raises(SpecError, match=r"unknown key \(known: levels\)$"):
        far.done()


def test_a_missing_required_key_is_reported_as_its_typo():
    sec = Section({"hosts_per_lef": 2}, "f.yaml", "fabric")
    with pytest.raises(SpecError, match=r"fabric.hosts_per_lef: unknown key \(did you mean"):
        sec.int("hosts_per_leaf")


def test_an_error_caused_by_a_typos_default_is_reported_as_the_typo():
    def read(data):
        sec = Section(data, "f.yaml")
        if sec.int("levels", 1) < 2:  # the default leads to another error
            raise sec.error("policy", "needs 2 levels")
        sec.done()

    with pytest.raises(SpecError, match=r"^f.yaml: levls: unknown key \(did you mean 'levels'"):
        with typos_first():
            read({"levls": 4})
    with pytest.raises(SpecError, match="policy: needs 2 levels"):  # no typo: the error
        with typos_first():
            read({"levels": 1})


def test_a_key_asked_about_is_no_typo_candidate():
    def read(data):
        sec = Section(data, "f.yaml")
        if sec.has("job") or not sec.has("jobs"):
            raise sec.error("jobs", "not this way")
        raise sec.error("jobs", "jobs given")  # jobs is known, not a typo of job

    with pytest.raises(SpecError, match="jobs: jobs given"):
        with typos_first():
            read({"jobs": [1]})


@pytest.mark.parametrize(("value", "out"), [(1e9, 1_000_000_000), (8.0, 8), (3, 3)])
def test_a_whole_float_is_an_integer(value, out):
    got = check_int(value, ValueError)
    assert got == out and isinstance(got, int)


@pytest.mark.parametrize("value", [2.5, True, "3"])
def test_a_fraction_a_bool_or_text_is_not(value):
    with pytest.raises(ValueError, match="must be an integer"):
        check_int(value, ValueError)


def test_a_valid_key_not_read_yet_is_not_taken_for_a_typo():
    # mid (valid, read later) is 0.8 like the absent id: the real error stands
    def read(data):
        sec = Section(data, "f.yaml")
        sec.str("id", "c1")
        sec.int("level", 0, hi=7)
        sec.int("mid", 0)
        sec.done()

    with pytest.raises(SpecError, match=r"^f.yaml: level: must be in \[-inf, 7\], got 9$"):
        with typos_first():
            read({"mid": 1, "level": 9})
