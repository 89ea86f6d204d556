"""A stand-in for TF 1.x's ``tf.contrib.rnn`` (gone from TF 2.x), naming the core classes and functions TF 1.x
itself aliased there (``tf.contrib.rnn.BasicLSTMCell`` is ``tf.nn.rnn_cell.BasicLSTMCell``, ``static_rnn`` is
``tf.nn.static_rnn``), from the engine ``$CORPUS_ENGINE`` names (``tf`` or ``dfcore``)."""

import os

if os.environ.get("CORPUS_ENGINE") == "tf":
    import tensorflow.compat.v1 as tf
else:
    import dfcore as tf

BasicLSTMCell = tf.nn.rnn_cell.BasicLSTMCell
BasicRNNCell = tf.nn.rnn_cell.BasicRNNCell
GRUCell = tf.nn.rnn_cell.GRUCell
LSTMCell = tf.nn.rnn_cell.LSTMCell
MultiRNNCell = tf.nn.rnn_cell.MultiRNNCell
DropoutWrapper = tf.nn.rnn_cell.DropoutWrapper
LSTMStateTuple = tf.nn.rnn_cell.LSTMStateTuple
static_rnn = tf.nn.static_rnn
static_bidirectional_rnn = tf.nn.static_bidirectional_rnn
