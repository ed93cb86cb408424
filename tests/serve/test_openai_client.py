"""The official ``openai`` Python client against ``biorag serve`` running on loopback (uvicorn in
a thread): the model list, a chat whose content is a list of parts, a streamed chat with
``stream_options.include_usage``, and a refused image part as the client's own error."""

from __future__ import annotations

import pytest

openai = pytest.importorskip("openai", reason="pip install openai (a dev dependency)")
pytest.importorskip("uvicorn")

from tests.serve.test_page_browser import _serving  # noqa: E402

DOCS = [
    {"id": "1001", "text": "Vitamin D supplementation did not reduce fracture risk in adults."},
    {"id": "1002", "text": "Atorvastatin lowers LDL cholesterol and cardiovascular events."},
]
QUESTION = [{"type": "text", "text": "Does atorvastatin lower LDL cholesterol?"}]


@pytest.fixture
def client(tmp_path, hash_embedder, index_of):
    from biorag.config import Settings
    from biorag.runtime import Runtime
    from biorag.serve.app import ServerConfig, create_app

    index = index_of(DOCS, "toy")
    settings = Settings(home=str(tmp_path / "home"))
    rt = Runtime(settings, [index], embedder=hash_embedder)
    app = create_app(settings, ServerConfig(index_paths=[index]), runtime=rt)
    for url in _serving(app):
        yield openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
    rt.close()


def test_the_model_list_and_a_chat_with_content_parts(client):
    models = [m.id for m in client.models.list()]
    assert "retrieve-read" in models and "claims" in models
    r = client.chat.completions.create(
        model="retrieve-read", messages=[{"role": "user", "content": QUESTION}]
    )
    text = r.choices[0].message.content
    assert "Atorvastatin" in text and "PMID 1002" in text
    assert r.usage is not None and r.choices[0].finish_reason == "stop"


def test_a_stream_with_usage_at_the_end(client):
    stream = client.chat.completions.create(
        model="retrieve-read", messages=[{"role": "user", "content": QUESTION}],
        stream=True, stream_options={"include_usage": True},
    )  # fmt: skip
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "PMID 1002" in text
    assert chunks[-1].choices == [] and chunks[-1].usage is not None


def test_an_image_part_is_the_clients_bad_request_naming_it(client):
    parts = [*QUESTION, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model="retrieve-read", messages=[{"role": "user", "content": parts}]
        )
    assert "messages[0].content[1] is a 'image_url' part" in str(e.value)
