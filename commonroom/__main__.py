"""``python -m commonroom`` is ``ce``."""

from .cli.main import main

main()
