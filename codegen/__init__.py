"""The schema → generated/ pipeline (see ``python -m codegen --help``)."""
