"""A differential test passes only if it compared something: one that ran no assertion (an
empty reference table looped over, an early return) fails here instead of counting as a pass.
Cases with nothing to compare are not generated, or are skipped with the reason."""

from __future__ import annotations

import pytest

ASSERTIONS = pytest.StashKey[int]()


def pytest_assertion_pass(item, lineno, orig, expl):  # needs enable_assertion_pass_hook
    item.stash[ASSERTIONS] = item.stash.get(ASSERTIONS, 0) + 1


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when == "call" and report.passed and not item.stash.get(ASSERTIONS, 0):
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} passed without running an assertion: it compared "
                           "nothing. Generate it only where there is something to compare, or "
                           "skip it with the reason.")
