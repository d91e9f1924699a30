"""The pieces every ``report.html`` page is built of: numbers to three significant
digits (``sig3``), escaped text, tables whose cells wrap so that the page fits a 1280-px
window, inlined PNG figures with captions, links to the folder's files, and the inline
style sheet."""

from __future__ import annotations

import base64
import html as _html
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

STYLE = (
    "*{box-sizing:border-box}"
    "body{font-family:sans-serif;margin:0 auto;padding:1em 1.5em;max-width:1200px}"
    ".answer{font-size:17px;font-weight:bold;background:#eef4ff;padding:.6em}"
    ".note{background:#fff8e6;padding:.4em .6em}"
    "table{border-collapse:collapse;margin:.5em 0 1.5em;max-width:100%}"
    "td,th{border:1px solid #bbb;padding:2px 6px;font-size:13px;text-align:right;"
    "overflow-wrap:anywhere}"
    "th{background:#eee}td:first-child,th:first-child{text-align:left}"
    "table[data-table=env] td{text-align:left}"
    "pre{background:#f6f6f6;padding:.5em;font-size:12px;white-space:pre-wrap;"
    "overflow-wrap:anywhere}"
    "figure{margin:.5em 0}"
    "img{max-width:100%;height:auto;border:1px solid #ddd}"
)


def esc(v: object) -> str:
    """Escaped text of a cell (blank for None)."""
    return "" if v is None else _html.escape(str(v))


def sig3(v: object) -> str:
    """A figure as shown: floats to 3 significant digits (trailing zeros kept: 0.930,
    7.36, 1.00; 123456 as 123000; below 1e-4 or from 1e6 in exponent form), integers
    and text as they are, None as a dash."""
    if v is None:
        return "–"
    if not isinstance(v, float) or not math.isfinite(v):
        return str(v)
    if v == 0:
        return "0"
    r = float(f"{v:.3g}")  # rounded first: 9.996 is 10.0, not 10.00
    exp = math.floor(math.log10(abs(r)))
    if exp < -4 or exp >= 6:
        return f"{r:.2e}"
    return f"{r:.{max(0, 2 - exp)}f}"


def cell(text: str) -> str:
    """A CSV cell as shown: a number with a fraction or exponent to 3 significant
    digits, anything else (integers, names, blanks) as written."""
    if not any(ch in text for ch in ".eE") or text.strip() != text:
        return text
    try:
        return sig3(float(text))
    except ValueError:
        return text


def table(header: Sequence[str], rows: Iterable[Sequence[object]], name: str = "") -> str:
    """An HTML table (``data-table`` = ``name``); cells escaped, except those given as
    ``Raw`` markup."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_inner(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table data-table="{esc(name)}"><tr>{head}</tr>{body}</table>'


class Raw(str):
    """Markup that a table puts into its cell as it is (a link)."""


def _inner(c: object) -> str:
    """A cell's markup: ``Raw`` as it is, anything else escaped."""
    return c if isinstance(c, Raw) else esc(c)


def link(href: str, text: str) -> Raw:
    """A link (``href`` relative to the page, or a file URI)."""
    return Raw(f'<a href="{esc(href)}">{esc(text)}</a>')


def figure(png: Path, caption: str = "") -> str:
    """A PNG inlined as a data URI, with its caption (its name when none)."""
    data = base64.b64encode(png.read_bytes()).decode()
    return (
        f'<figure><img alt="{esc(png.name)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{esc(caption or png.name)}</figcaption></figure>"
    )


def files_list(folder: Path, names: Iterable[str]) -> str:
    """Links to the files of ``folder`` among ``names`` that exist (a paragraph)."""
    got = [link(n, n) for n in names if (folder / n).is_file()]
    return f"<p>Full data: {', '.join(got)}.</p>" if got else ""
