"""The OpenAI-compatible endpoint: ``/v1/chat/completions``, ``/v1/responses``, ``/v1/models``, ``/v1/embeddings``.

- ``requests``: the chat request bodies, and a request as the conversation the client keeps;
- ``responses``: the chat response bodies (non-streamed and streamed), as OpenAI's API reference shapes them;
- ``items``: a Responses API request (``input`` items) as the chat request it amounts to;
- ``response_objects``: the Responses API's response object and stream events;
- ``replays``: a retried request gets the first one's turn, not a new one;
- ``routes``: the routes.
"""
