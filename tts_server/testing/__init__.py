"""Test and benchmark helpers: a fast fake engine (``fake_engine``) and a real uvicorn server on
loopback in a background thread (``server_thread``). Shipped, so that the reliability benchmark
runs from an installed package as well as from a checkout."""
