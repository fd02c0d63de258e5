"""Trains and converts the two int8 models of this directory that hilmem made.

Both are small, trained on synthetic signals in seconds, and fully int8
(inputs and outputs too), converted by the TensorFlow converter this is run
with (it prints its version):

- wave_shape.tflite: 1-D convolutions over 64 samples, averaged over time
  (GlobalAveragePooling1D: MEAN), classes sine, square, sawtooth.
- stripes.tflite: a residual 2-D network over a 16x16 image whose head
  flattens with the runtime's batch size (tf.shape: SHAPE, STRIDED_SLICE,
  PACK), classes horizontal, vertical.

It also writes one input of each class per model (int8, quantized with the
model's input parameters) and checks the converted model names them right
with TensorFlow's interpreter.

    pip install tensorflow-cpu numpy
    python3 make_models.py
"""

import pathlib

import numpy as np
import tensorflow as tf

HERE = pathlib.Path(__file__).parent
RNG = np.random.default_rng(7)
tf.keras.utils.set_random_seed(7)


def wave(kind, n=64):
    period = RNG.uniform(8, 24)
    phase = RNG.uniform(0, 1)
    t = (np.arange(n) / period + phase) % 1.0
    x = {0: np.sin(2 * np.pi * t), 1: np.where(t < 0.5, 1.0, -1.0), 2: 2 * t - 1}[kind]
    return (x * RNG.uniform(0.6, 1.0) + RNG.normal(0, 0.05, n)).astype(np.float32)


def stripes(kind, n=16):
    period = RNG.integers(3, 6)
    line = (np.arange(n) % period < period // 2).astype(np.float32)
    image = np.tile(line[:, None], (1, n)) if kind == 0 else np.tile(line[None, :], (n, 1))
    return (image + RNG.normal(0, 0.1, (n, n))).astype(np.float32)[..., None]


def wave_shape_model():
    inputs = tf.keras.Input((64, 1), batch_size=1)
    x = tf.keras.layers.Conv1D(8, 5, activation="relu")(inputs)
    x = tf.keras.layers.Conv1D(16, 5, activation="relu")(x)
    x = tf.keras.layers.GlobalAveragePooling1D()(x)
    outputs = tf.keras.layers.Dense(3, activation="softmax")(x)
    return tf.keras.Model(inputs, outputs)


class Flatten(tf.keras.layers.Layer):
    """Flattens to `features` per item, with the batch size the runtime sees (tf.shape)."""

    def __init__(self, features):
        super().__init__()
        self.features = features

    def call(self, x):
        return tf.reshape(x, tf.stack([tf.shape(x)[0], self.features]))


def stripes_model():
    inputs = tf.keras.Input((16, 16, 1))  # batch size left to the runtime
    x = tf.keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inputs)
    y = tf.keras.layers.DepthwiseConv2D(3, padding="same", activation="relu")(x)
    x = tf.keras.layers.Add()([x, y])
    x = tf.keras.layers.AveragePooling2D(4)(x)
    x = Flatten(4 * 4 * 8)(x)
    outputs = tf.keras.layers.Dense(2, activation="softmax")(x)
    return tf.keras.Model(inputs, outputs)


def train_and_convert(name, model, make, classes, shape):
    xs = np.stack([make(i % classes) for i in range(1200)]).reshape((-1, *shape))
    ys = np.array([i % classes for i in range(1200)])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(xs, ys, epochs=8, batch_size=32, verbose=0)
    print(f"{name}: training accuracy {model.evaluate(xs, ys, verbose=0)[1]:.3f}")

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = lambda: ([x[None]] for x in xs[:200])
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    (HERE / f"{name}.tflite").write_bytes(converter.convert())

    interpreter = tf.lite.Interpreter(model_path=str(HERE / f"{name}.tflite"))
    interpreter.allocate_tensors()
    inp, out = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
    scale, zero = inp["quantization"]
    for kind in range(classes):
        x = make(kind).reshape((1, *shape))
        q = np.clip(np.round(x / scale) + zero, -128, 127).astype(np.int8)
        interpreter.set_tensor(inp["index"], q)
        interpreter.invoke()
        answer = int(np.argmax(interpreter.get_tensor(out["index"])))
        assert answer == kind, f"{name}: class {kind} input answered {answer}"
        q.tofile(HERE / f"{name}-{kind}.int8")
        print(f"{name}-{kind}.int8: {q.size} int8 values, class {answer}")


if __name__ == "__main__":
    print(f"TensorFlow {tf.__version__}")
    train_and_convert("wave_shape", wave_shape_model(), wave, 3, (64, 1))
    train_and_convert("stripes", stripes_model(), stripes, 2, (16, 16, 1))
