"""The OpenAI-compatible endpoint: ``/v1/chat/completions``, ``/v1/models``, ``/v1/embeddings``.

- ``requests``: the request bodies, and a request as the conversation the client keeps;
- ``responses``: the response bodies (non-streamed and streamed), as OpenAI's API reference shapes them;
- ``replays``: a retried request gets the first one's turn, not a new one;
- ``routes``: the routes.
"""
