"""A model's further languages: each scored on its own probing tasks (``sides``) and on translation retrieval
against the first language (``retrieval``)."""
