"""The operation table: every operation declared once, every adapter derived from it.

See :mod:`commonroom.operations.spec` (what a declaration says),
:mod:`commonroom.operations.table` (the declarations) and
:mod:`commonroom.operations.runner` (reads on the loop, writes on the one
writer thread).
"""

from .spec import BOTH, INGRESS, OWNER, Arg, Http, Mcp, Operation, Table
from .table import OPERATIONS

__all__ = ["OPERATIONS", "Operation", "Table", "Http", "Mcp", "Arg", "BOTH", "INGRESS", "OWNER"]
