"""TF's ``Example`` protos compiled for dfcore (``tensorboard`` does not ship them): see ``feature.proto``
and ``example.proto`` beside this file, and ``make protos``. Import the messages from
:mod:`dfcore.framework.protos`."""
