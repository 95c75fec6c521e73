"""The suite's own conftest: what it promises the tests (tests/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.mark.xdist_group("conftest-groups")
@pytest.mark.parametrize("case", ["a", "b"])
def test_a_grouped_test_carries_its_group_to_pytest_xdist(request, case):
    """Under ``--dist loadgroup`` (pyproject's addopts) a grouped test's id ends in ``@GROUP``,
    which is what sends the group to one worker: the ncu tests one at a time, the builds made once.
    pytest 9.2 with pytest-xdist 3.8 lost the suffix and spread every group
    (pytest-dev/pytest-xdist#1386)."""
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not under pytest-xdist's --dist loadgroup (pytest -n 0, or another --dist)")
    assert request.node.nodeid.endswith(f"[{case}]@conftest-groups"), request.node.nodeid
