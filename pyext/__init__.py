"""pyconsumer hot path: Cython extension modules (record sets, Arrow builders, draining)."""
