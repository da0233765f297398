"""``pytest --each-alone``: every test runs as if it ran alone, in one pytest process.

pytest tears down a module's fixtures when the next test belongs to another module, so ordering the tests
so that no two in a row share a module builds every module-scoped fixture (a module's shared room) again
for each test. The suite has no session-, package- or class-scoped fixture of its own; what else one test
could leave for another in the same process, its environment variables and working folder, is checked
after each test. docs/architecture.md ("Every test passes alone") gives the command;
tests/unit/test_each_alone.py shows an order-dependent pair failing under it.
"""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--each-alone``: run every test as if it ran alone (see :func:`pytest_collection_modifyitems`)."""
    parser.addoption(
        "--each-alone", action="store_true", default=False,
        help="order the tests so that no two in a row share a module: every module-scoped fixture (a module's "
             "shared room) is torn down and built again for each test, and a test that changes the environment "
             "or the working folder fails (tests/each_alone.py).")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--each-alone``, interleave the modules (after pytest-randomly's shuffle, which stays seeded):
    pytest tears down the fixtures of a module when the next test belongs to another one, so each test
    gets its module's fixtures built for it alone. Where one module's tests are all that is left, a
    separator from no module (:func:`_separator`) stands between two of them."""
    if config.getoption("each_alone"):
        items[:] = _interleaved(items, items[0].session) if items else items


def _module_key(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _interleaved(items: list[pytest.Item], session: pytest.Session) -> list[pytest.Item]:
    """``items`` reordered so that no two consecutive share a module: always the module with the most tests
    left that is not the one just run (the first in the given order on a tie), separators where none is."""
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        groups.setdefault(_module_key(item), []).append(item)
    queues = {key: list(reversed(group)) for key, group in groups.items()}
    order = list(groups)
    out: list[pytest.Item] = []
    last = None
    while queues:
        choices = [k for k in order if k in queues and k != last]
        if not choices:
            out.append(_separator(session, len(out)))
            last = None
            continue
        key = max(choices, key=lambda k: len(queues[k]))
        out.append(queues[key].pop())
        if not queues[key]:
            del queues[key]
        last = key
    return out


def _separate() -> None:
    """Nothing: a test from no module, so that the module of the test before it is torn down."""


def _separator(session: pytest.Session, index: int) -> pytest.Item:
    return pytest.Function.from_parent(session, name=f"each-alone-separator-{index}", callobj=_separate)


_BEFORE = pytest.StashKey[tuple[dict[str, str], str]]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """With ``--each-alone``, note the environment variables and working folder before the test's setup."""
    if item.config.getoption("each_alone"):
        item.stash[_BEFORE] = (dict(os.environ), os.getcwd())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """With ``--each-alone``, a test whose run and teardown leave the process's environment variables or
    working folder changed fails in its teardown; both are put back so the next test does not inherit them."""
    result = yield
    if _BEFORE in item.stash:
        environ, cwd = item.stash[_BEFORE]
        changed = sorted(k for k in set(environ) | set(os.environ)
                         if environ.get(k) != os.environ.get(k) and k != "PYTEST_CURRENT_TEST")  # pytest's own
        moved = os.getcwd() != cwd
        if changed or moved:
            for key in changed:
                if key in environ:
                    os.environ[key] = environ[key]
                else:
                    del os.environ[key]
            os.chdir(cwd)
            raise AssertionError(f"the test left the environment changed: variables {changed}, "
                                 f"working folder {'moved' if moved else 'kept'}")
    return result
