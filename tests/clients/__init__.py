"""Test-only client generators (see generators.py)."""
