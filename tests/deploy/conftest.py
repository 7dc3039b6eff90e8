"""The ``aws`` fixture: stubbed clients, every queued response consumed by the end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.deploy.stubs import Stubbed


@pytest.fixture
def aws() -> Iterator[Stubbed]:
    stubbed = Stubbed()
    yield stubbed
    stubbed.verify()
