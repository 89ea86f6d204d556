"""TF's messages that the ``tensorboard`` package does not ship, compiled for dfcore: ``Example`` and its
``Feature`` messages, ``QueueRunnerDef`` and the ``error.Code`` enum it uses. The ``.proto`` files beside
this one follow TF's schema (names, field numbers: TF's wire format) in a package of dfcore's own,
``dfcore.tensorflow`` (TF's ``tensorflow``, ``tensorflow.error``, ``tensorflow.grpc``, prefixed), so that they
never collide with TensorFlow's in protobuf's default descriptor pool; ``make protos`` regenerates the ``*_pb2``
modules. Import the messages from :mod:`dfcore.framework.protos`."""
