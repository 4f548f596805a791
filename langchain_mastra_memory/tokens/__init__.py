"""Tokens: counting them as the providers do (`counting.TokenCounter`), tiktoken's encodings
installed offline (`tokenizers`), and the model files installed from registry packages at setup
(`registry_files`: the BPE files and the embedder's weights)."""
