"""Strict YAML files: a key given twice, and a file that is not UTF-8 text, are one-line
errors naming the file, from the scenario, sweep and job readers alike; nothing is
written."""

from __future__ import annotations

import pytest
import yaml

from coflowbed.cli.main import main
from workload.yamlfile import parse_yaml

DUPLICATE = "name: a\nlevels: 4\nname: b\n"


def test_a_key_given_twice_is_refused_where_it_stands():
    with pytest.raises(yaml.YAMLError) as err:
        parse_yaml(DUPLICATE)
    assert "key 'name' appears twice" in str(err.value) and "line 3" in str(err.value)


def test_nested_and_distinct_keys_are_fine():
    assert parse_yaml("a: {x: 1, y: 2}\nb: {x: 3}\n") == {"a": {"x": 1, "y": 2}, "b": {"x": 3}}


@pytest.mark.parametrize(
    ("argv", "content", "says"),
    [
        (["simulate"], DUPLICATE, "line 3: invalid YAML: key 'name' appears twice"),
        (["simulate"], b"\x7fELF\x02\x01\x01\x00\xff\xfe", "not a UTF-8 text file"),
        (["workload"], "name: j\nmodel: {layers: 2}\nmodel: {layers: 3}\n", "appears twice"),
        (["workload"], b"\xff\xfe\x00binary", "not a UTF-8 text file"),
    ],
)
def test_each_reader_gives_one_line_and_writes_nothing(tmp_path, capsys, argv, content, says):
    src = tmp_path / "in.yaml"
    src.write_bytes(content if isinstance(content, bytes) else content.encode())
    out = tmp_path / "out"
    extra = ["--out", str(out)] if argv == ["simulate"] else ["-o", str(out)]
    assert main([*argv, str(src), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"coflowbed: error: {src}") and says in err and "\n" not in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("text", "value"),
    [("1e15", 1e15), ("-2E-3", -0.002), ("5e+2", 500.0), (".5e3", 500.0), ("1.0e+15", 1e15)],
)
def test_a_number_with_an_exponent_is_a_number_as_in_yaml_1_2(text, value):
    assert parse_yaml(f"x: {text}") == {"x": value}
    assert yaml.safe_load(f"x: {text}")["x"] in (text, value)  # PyYAML's own loader unchanged


@pytest.mark.parametrize("text", ["1e", "e5", "1e5x", "15", "0x10", "abc"])
def test_other_scalars_read_as_before(text):
    assert parse_yaml(f"x: {text}") == yaml.safe_load(f"x: {text}")
