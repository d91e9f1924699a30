"""coflowbed.analysis.report.markup: numbers to 3 significant digits (no 17-digit floats
on the page) and CSV cells formatted only when they are numbers with a fraction."""

from __future__ import annotations

import pytest

from coflowbed.analysis.report.markup import cell, link, sig3, table


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (7.357098271390132, "7.36"),
        (0.929698005466456, "0.930"),  # trailing zero kept: three digits
        (1.0, "1.00"),
        (0.06650738364186011, "0.0665"),
        (9.9996, "10.0"),  # rounds up into the next decade, still three digits
        (123456.7, "123000"),
        (4.57e-05, "4.57e-05"),
        (2.5e7, "2.50e+07"),
        (-0.000151, "-0.000151"),
        (0.0, "0"),
        (336, "336"),  # integers as they are
        (None, "–"),
        ("fair", "fair"),
    ],
)
def test_figures_are_shown_to_three_significant_digits(value, shown):
    assert sig3(value) == shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("0.062366811372027896", "0.0624"),
        ("7.368235483999342", "7.37"),
        ("1e-05", "1.00e-05"),
        ("336", "336"),
        ("10.0.1.1", "10.0.1.1"),
        ("hermod", "hermod"),
        ("", ""),
        ("False", "False"),
    ],
)
def test_csv_cells_are_formatted_only_when_they_are_fractional_numbers(text, shown):
    assert cell(text) == shown


def test_a_table_escapes_text_but_keeps_links():
    html = table(("run", "x"), [(link("fair/r1/report.html", "fair/r1"), "<b>")], "t")
    assert '<td><a href="fair/r1/report.html">fair/r1</a></td><td>&lt;b&gt;</td>' in html
