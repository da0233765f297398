"""Benchmarks are scripts (they print figures); pytest does not collect them."""

collect_ignore_glob = ["*.py"]
