"""Checkpoints, in one place: the file names a run writes and which one a command takes (``choice``), the file
written whole or not at all and checked before it is read (``files``), a received file read as data (``received``,
``legacy``: what earlier versions wrote), no NaN weights in any of them (``non_finite_weights``), the callbacks that
write them during a run (``callbacks``), Lightning's writer plugin (``lightning_io``), and a weights fingerprint
(``weights_hash``)."""
