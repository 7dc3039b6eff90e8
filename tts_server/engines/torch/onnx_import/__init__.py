"""The torch engine's model, imported from the packaged int8 ONNX model.

- ``graph_weights``: each weight the ONNX graph computes with, found, dequantized to float32
  and laid out as torch has it, with the modules it may belong to;
- ``state_dicts``: those weights placed into ``KModel``'s per-part state dicts (``convert``);
- ``model_dir``: the torch engine's model directory written from them, cached by the ONNX
  model's checksum and a digest of the importer's own source (and its other inputs).
"""
