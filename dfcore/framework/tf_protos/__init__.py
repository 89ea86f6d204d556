"""TF's messages that the ``tensorboard`` package does not ship, compiled for dfcore: ``Example`` and its
``Feature`` messages, ``QueueRunnerDef`` and the ``error.Code`` enum it uses. The ``.proto`` files beside
this one follow TF's schema (package, names, field numbers); ``make protos`` regenerates the ``*_pb2``
modules. Import the messages from :mod:`dfcore.framework.protos`."""
