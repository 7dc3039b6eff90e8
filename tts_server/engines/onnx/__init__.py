"""The ONNX wing: Kokoro-82M's int8 ONNX model on onnxruntime (the embedded CPU default).

- ``engine``: ``OnnxEngine``, the packaged (or a directory's) model on one session per lane;
- ``lanes``: each lane's sessions (a one-thread one beside its own, for while another lane
  runs), which one a run takes, and a run's interrupt;
- ``graph``: reading Kokoro's graph: where its durations are, the model that outputs them, and
  the sessions' options (threads, spinning);
- ``split``: the graph cut into a text side and a decoder that pools statistics with a prior,
  to decode a sentence in windows;
- ``priors``: each voice's prior, from fixed calibration sentences decoded whole in it.

Nothing here imports onnxruntime until an engine is built.
"""
