"""The ``ce`` command line (Typer; one module per command group)."""
