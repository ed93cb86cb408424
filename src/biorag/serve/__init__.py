"""The HTTP service and its page (``biorag serve``; needs the ``server`` extra: FastAPI,
uvicorn)."""
