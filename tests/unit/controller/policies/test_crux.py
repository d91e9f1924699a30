"""Crux's job order and its priority compression (controller.policies.crux)."""

from __future__ import annotations

from controller.policies.crux import compress_jobs, contending_pairs, crux_order

P3 = {"A": 3.0, "B": 2.0, "C": 1.0}


def test_higher_gpu_intensity_is_more_urgent_ties_by_name():
    assert crux_order({"x": 1.0, "y": 2.0, "w": 1.0}) == ["y", "w", "x"]


def test_no_more_jobs_than_classes_each_job_its_own_class():
    assert compress_jobs(P3, set(), 3) == {"A": 0, "B": 1, "C": 2}


def test_compression_separates_the_contending_pair_a_b():
    """Only A and B contend (weight min(P_A, P_B) = 2).  Cuts of A > B > C into 2 groups:
    {A}{B,C} separates A-B (2) + A-C (0) = 2; {A,B}{C} separates A-C + B-C = 0.  So A
    alone in class 0, B and C share class 1."""
    contend = {frozenset("AB")}
    assert compress_jobs(P3, contend, 2) == {"A": 0, "B": 1, "C": 1}


def test_compression_separates_the_contending_pair_b_c():
    """Only B and C contend (weight 1): {A}{B,C} separates 0, {A,B}{C} separates 1."""
    contend = {frozenset("BC")}
    assert compress_jobs(P3, contend, 2) == {"A": 0, "B": 0, "C": 1}


def test_one_class_holds_every_job():
    assert compress_jobs(P3, {frozenset("AB")}, 1) == {"A": 0, "B": 0, "C": 0}


def test_jobs_contend_when_they_share_a_leaf():
    pairs = contending_pairs({"a": ["1", "2"], "b": ["2", "3"], "c": ["4"]})
    assert pairs == {frozenset(("a", "b"))}
