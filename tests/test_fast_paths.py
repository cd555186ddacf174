"""Fast paths of tidy's costs keep their results: raw-file hashing and listing, a parser's row checks."""

import hashlib

import pytest

from helpers import campaign_record
from perflab import store
from perflab.tools.base import ParseError, Rows, number


def test_sha256_of_small_empty_and_multi_chunk_files(tmp_path):
    for size in (0, 5, store.HASH_CHUNK, store.HASH_CHUNK + 1, 3 * store.HASH_CHUNK + 17):
        data = bytes(range(256)) * (size // 256) + bytes(size % 256)
        path = tmp_path / f"f{size}"
        path.write_bytes(data)
        assert store.sha256_file(path) == hashlib.sha256(data).hexdigest(), size


def test_unlisted_files_come_in_path_order_hidden_ones_skipped(tmp_path):
    s = store.RawStore(tmp_path, "camp")
    s.begin(campaign_record("camp", digest="abc"))
    s.put_sample("r1", {"stdout": "a"})
    for rel in ("a.b/c", "a/b", "samples/r1/zz", "samples/.tmp-r2/stdout", ".hidden", "blocks/.x"):
        (s.dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (s.dir / rel).write_text("x")
    assert store.unlisted(s.dir) == ["a/b", "a.b/c", "samples/r1/zz"]  # the order of sorted Paths
    assert [p for p in store.verify(s.dir) if "not in the manifest" in p] == [
        "a/b: not in the manifest", "a.b/c: not in the manifest", "samples/r1/zz: not in the manifest"]


@pytest.mark.parametrize("dims", [{"job": 0, "direction": "read"}, {"percentile": 99.5, "stream": [1, 2]}])
def test_a_measurement_twice_is_refused_whatever_the_order_of_its_dims(dims):
    rows = Rows("f")
    rows.add("iops", 1, "IOPS", "iops", **dims)
    rows.add("iops", 1, "IOPS", "iops", **{**dims, "other": 1})
    with pytest.raises(ParseError, match="twice"):
        rows.add("iops", 2, "IOPS", "iops", **dict(reversed(list(dims.items()))))


def test_number_keeps_ints_floats_nan_and_refuses_booleans():
    assert number(3, source="f", what="x") == 3.0 and type(number(3, source="f", what="x")) is float
    assert number(2.5, source="f", what="x") == 2.5 and number(float("nan"), source="f", what="x") is None
    assert number("5,4", source="f", what="x") == 5.4
    with pytest.raises(ParseError, match="a number for x"):
        number(True, source="f", what="x")


def test_libyaml_and_the_pure_python_parser_read_every_shipped_yaml_file_alike():
    from pathlib import Path

    from perflab import yamlfile

    root = Path(__file__).resolve().parents[1]
    files = sorted(p for pattern in ("studies/*/study.yaml", "**/campaigns/**/*.yaml") for p in root.glob(pattern))
    assert len(files) > 20
    for path in files:
        text = path.read_text()
        fast, slow = yamlfile._parse(yamlfile._FastLoader, text), yamlfile._parse(yamlfile._Loader, text)
        assert fast[1] == slow[1] and yamlfile._line_map(fast[0]) == yamlfile._line_map(slow[0]), path
