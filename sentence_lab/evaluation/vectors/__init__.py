"""The suite's encoded vectors: each distinct sentence encoded once per run (``embedding_cache``), and every layer's
vectors kept on disk and read a layer at a time (``layer_store``)."""
