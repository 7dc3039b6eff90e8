"""The session's parts; ``tts_client.session`` (``TTSSession``) is their facade.

``book`` (``SegmentBook``: the protocol and the callers' streams, in step), ``sender``
(``SegmentSender``: writes), ``reader`` (``LinkReader``: reads and events), ``keeper``
(``LinkKeeper``: connect, reconnect, roll over), ``deferred`` (``DeferredRetry``: segments the
server refused as busy), ``background`` (``BackgroundTasks``) and ``link`` (``SessionLink``: one
connection and its protocol). docs/tts_client.md.
"""
