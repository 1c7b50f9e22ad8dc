"""``slidewise serve``: the live query manager (:mod:`slidewise.manager`) as an HTTP JSON service.

:mod:`~slidewise.serve.tail` feeds growing files and directories into the manager on an ingestion
thread, :mod:`~slidewise.serve.app` is the Starlette application of the API, :mod:`~slidewise.serve.service`
runs both under uvicorn with a state directory, and :mod:`~slidewise.serve.client` is a small client.
"""
