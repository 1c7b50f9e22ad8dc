"""The test suite; helpers are imported as ``tests.<module>`` (e.g. ``from tests.oracle import oracle``)."""
