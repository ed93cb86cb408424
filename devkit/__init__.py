"""Development support shared by tests/ and benchmarks/: starting and stopping local servers
(llama-server, llama-cpp-python's server, milvus-lite), locating the small real model
(SmolLM2-135M's GGUF) and the small sample vocabularies of the strata tests.

Plain helpers, no pytest fixtures (those stay in tests/). Not part of the installed ``biorag``
package (pyproject finds packages under src/ only); importable from the repository root, which
pytest puts on ``sys.path`` (``pythonpath = ["."]``) and the benchmarks insert themselves.
Nothing under src/ imports it (tests/test_layout.py).
"""
