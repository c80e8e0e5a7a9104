"""pytest setup for moeperm's Python tests.

Run them with `pytest tests/python` after `pip install .`, or through CTest (label
`python`), which puts the build tree's package first on PYTHONPATH and sets:
  MOEPERM_PYTHON_PACKAGE_DIR      the package the tests must import (not a stale install);
  MOEPERM_PYTEST_ALL_SKIPPED_CODE the exit code for a run whose tests were all skipped, so
                                  that CTest reports e.g. the CUDA tests without a GPU as
                                  skipped rather than passed.
"""

import os

import pytest


def pytest_configure(config):
    expected = os.environ.get("MOEPERM_PYTHON_PACKAGE_DIR")
    if expected:
        import moeperm
        where = os.path.dirname(os.path.realpath(moeperm.__file__))
        if where != os.path.realpath(expected):
            raise pytest.UsageError(f"imported moeperm from {where}, expected {expected}")


def pytest_sessionfinish(session, exitstatus):
    code = os.environ.get("MOEPERM_PYTEST_ALL_SKIPPED_CODE")
    if not code or exitstatus != 0 or session.testscollected == 0:
        return
    stats = session.config.pluginmanager.get_plugin("terminalreporter").stats
    if not stats.get("passed") and stats.get("skipped"):
        session.exitstatus = int(code)
