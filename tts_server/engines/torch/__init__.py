"""The PyTorch wing: Kokoro-82M's ``KModel`` on PyTorch, batched across connections.

- ``engine``: ``TorchEngine``, the model directory checked and loaded, on CUDA when available;
- ``kokoro_batch``: kokoro's forward pass over a padded batch, with its load-time speed-ups;
- ``kokoro_masked``: the prosody blocks and the decoder, blind to padding;
- ``kmodel``: kokoro's ``KModel`` imported (also without its G2P pipeline), its ``PARTS`` and
  ``REPO_ID``;
- ``kokoro82m_config.json``: Kokoro-82M's published config (the import's architecture);
- ``onnx_import/``: the model directory made from the packaged int8 ONNX model.

Nothing here is imported unless the torch engine is chosen.
"""
