"""The wire shapes (JSON Schema 2020-12), package data of ``commonroom.schema``.

Read them with ``commonroom.schemas.load_all()``; see docs/architecture.md.
"""
