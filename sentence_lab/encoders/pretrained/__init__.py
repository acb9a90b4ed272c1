"""``encoder=pretrained``: a pre-trained Hugging Face transformer (a local folder or ``package:NAME``) fine-tuned by an
objective: ``folder_settings`` (its sentence-transformers pooling and length), ``carried`` (the folder's small files a
checkpoint carries) and ``encoder`` (the ``SentenceEncoder``)."""
