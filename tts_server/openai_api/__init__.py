"""OpenAI's speech API (``/v1``): the routes, the request and its checks, the response bodies
and their streaming encoders."""
