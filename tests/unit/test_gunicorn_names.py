"""The gunicorn names ``commonroom/worker.py`` relies on without a documented hook (docs/hardening.md,
*gunicorn names the worker relies on*): this fails when gunicorn changes under them.

Each method the worker overrides or calls is pinned by a hash of its source in the pinned
gunicorn; each attribute by its assignment in gunicorn's own code. A new gunicorn means reading
each again, then updating the hashes here.
"""

from __future__ import annotations

import hashlib
import inspect
import re
from pathlib import Path

import gunicorn
from gunicorn.asgi import parser, protocol
from gunicorn.workers import gasgi

from commonroom import worker

ROOT = Path(__file__).resolve().parents[2]
PINNED = "27.0.1"

#: (class, method) → the first 16 hex digits of the sha256 of its source in gunicorn PINNED.
METHODS = {
    ("ASGIProtocol", "_on_headers_complete"): "27b70078474dd11e",
    ("ASGIProtocol", "_close_transport"): "44a7b01bff383f42",
    ("ASGIProtocol", "_send_body"): "4018c80cc727dd1e",
    ("ASGIProtocol", "_safe_write"): "c91fb7e1a7560ea8",
    ("ASGIProtocol", "_send_error_response"): "d6e9f162ed3e8acd",
    ("ASGIWorker", "_shutdown"): "9598f4e44fbadf84",
    ("ASGIWorker", "handle_exit_signal"): "eb30bb9a34a77e7d",
    ("ASGIWorker", "handle_quit_signal"): "1b6c1f2f0c825ebc",
}
#: class → attributes the worker reads, each assigned in that class's source.
ATTRIBUTES = {
    "ASGIProtocol": ("worker", "_current_request", "_closed", "_finishing_calls", "_request_ready",
                     "_response_buffer"),
    "ASGIWorker": ("servers", "loop", "_quick_shutdown"),
}
CLASSES = {"ASGIProtocol": protocol.ASGIProtocol, "ASGIWorker": gasgi.ASGIWorker}


def digest(cls: type, name: str) -> str:
    return hashlib.sha256(inspect.getsource(getattr(cls, name)).encode()).hexdigest()[:16]


def test_the_pinned_gunicorn_is_installed():
    assert gunicorn.__version__ == PINNED
    assert f'"gunicorn=={PINNED}"' in (ROOT / "pyproject.toml").read_text()


def test_every_method_the_worker_overrides_or_calls_is_unchanged():
    changed = {key: digest(CLASSES[key[0]], key[1]) for key in METHODS
               if digest(CLASSES[key[0]], key[1]) != METHODS[key]}
    assert not changed, f"gunicorn changed under commonroom/worker.py: read these again: {changed}"


def test_every_attribute_the_worker_reads_is_still_assigned():
    for name, attributes in ATTRIBUTES.items():
        source = inspect.getsource(CLASSES[name])
        missing = [a for a in attributes if not re.search(rf"self\.{a}\s*=", source)]
        assert not missing, (name, missing)


def test_gasgi_still_makes_its_servers_with_the_module_level_protocol():
    assert "lambda: ASGIProtocol(self)" in inspect.getsource(gasgi.ASGIWorker)
    assert isinstance(getattr(gasgi, "ASGIProtocol"), type)


def test_the_parser_still_refuses_a_second_host_with_the_message_the_worker_maps():
    assert b"host" in parser.RFC9110_5_3_SINGLETON_FIELDS
    assert '"Duplicate %s header" % name.decode(\'latin-1\')' in inspect.getsource(parser)
    assert set(worker._HOST_REFUSALS) == {"Duplicate host header"}


def test_every_name_is_listed_in_the_docs():
    text = (ROOT / "docs" / "hardening.md").read_text()
    section = text[text.index("## gunicorn names the worker relies on"):]
    section = section[:section.index("\n## ")]
    assert PINNED in section.splitlines()[0]
    for cls, method in METHODS:
        assert f"`{method}`" in section or f"`{cls}.{method}`" in section, method
    for attributes in ATTRIBUTES.values():
        for attribute in attributes:
            assert attribute in section, attribute
