"""Test selection and sharding: run only the tests a change affects, split deterministically."""

from .affected import Selection, select_tests, split
from .shard import parse_shard, shard

__all__ = ["Selection", "parse_shard", "select_tests", "shard", "split"]
