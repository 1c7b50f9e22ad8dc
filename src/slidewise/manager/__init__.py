"""The live query manager (Golab, "Sliding Window Query Processing over Data Streams", PhD thesis,
University of Waterloo 2006, ch. 7 and §8.4): windows as circular arrays of sub-windows
(:mod:`~slidewise.manager.window`), queries compiled to sliding aggregates and answered by window or
synopsis scans (:mod:`~slidewise.manager.queries`), concurrency control of slides and scans
(:mod:`~slidewise.manager.transactions`), the periodic schedulers (:mod:`~slidewise.manager.scheduling`) and
:class:`~slidewise.manager.core.QueryManager`, which runs them on threads for a service to drive.
"""
