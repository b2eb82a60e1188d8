"""Rebuild the test models in ``tests/models/`` from scratch, deterministically.

TensorFlow is *not* a micronn dependency: run this in a throwaway virtual environment outside the repository::

    python3.11 -m venv /tmp/tfenv && /tmp/tfenv/bin/pip install tensorflow-cpu==2.21.0 tf-keras==2.21.0
    /tmp/tfenv/bin/python tools/make_models.py            # every model
    /tmp/tfenv/bin/python tools/make_models.py resnet_tiny_int8 float_cnn   # some of them

Built with tensorflow-cpu 2.21.0 (Keras 3.15.1; tf-keras 2.21.0 for the fused LSTMs); other versions may give
other bytes. Each model is built in its own process with fixed seeds, so a rebuild reproduces the files exactly.
The weights are random, not trained: memory planning and bit-exactness against TFLM do not depend on them.
To keep activations in a realistic range anyway, every BatchNormalization layer gets the mean and variance of
its own input over the calibration batch (a data-dependent init), so each normalised activation is roughly
N(beta, gamma^2) as in a trained net; the converter folds the batch norms into the convolutions. Full-integer
models are calibrated on a fixed set of random inputs.

Every model has a static batch of 1 (``batch_size=1`` on the Input), so the converter emits no SHAPE/PACK ops
for a dynamic batch dimension.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # the same float arithmetic on every x86 machine
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import layers  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "tests" / "models"
CALIBRATION_SAMPLES = 24

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)


# ---- helpers ----------------------------------------------------------------------------------------------------


def sample_uniform(shape: tuple[int, ...], low: float, high: float) -> Callable[[np.random.Generator], np.ndarray]:
    """A sampler of one batch-1 input, uniform in [low, high)."""
    return lambda rng: rng.uniform(low, high, size=shape).astype(np.float32)


def calibration_set(samplers: list[Callable], seed: int) -> list[list[np.ndarray]]:
    """The fixed representative dataset: CALIBRATION_SAMPLES input lists drawn with a seeded generator."""
    rng = np.random.default_rng(seed)
    return [[s(rng) for s in samplers] for _ in range(CALIBRATION_SAMPLES)]


def init_batch_norms(model: keras.Model, data: list[list[np.ndarray]], seed: int) -> None:
    """Give every BatchNormalization the statistics of its input over ``data`` and a random gamma/beta.

    Layers are handled in graph order, so each one sees the inputs already normalised upstream.
    """
    rng = np.random.default_rng(seed + 1000)
    batch = [np.concatenate([d[i] for d in data]) for i in range(len(model.inputs))]
    for layer in model.layers:
        if not isinstance(layer, layers.BatchNormalization):
            continue
        probe = keras.Model(model.inputs, layer.input)
        x = np.asarray(probe(batch if len(batch) > 1 else batch[0], training=False), dtype=np.float64)
        axes = tuple(range(x.ndim - 1))
        mean, var = x.mean(axis=axes), x.var(axis=axes) + 1e-3
        gamma = rng.uniform(0.6, 1.4, size=mean.shape)
        beta = rng.uniform(-0.2, 0.4, size=mean.shape)
        layer.set_weights([w.astype(np.float32) for w in (gamma, beta, mean, var)])


def convert(model: keras.Model, data: list[list[np.ndarray]], mode: str) -> bytes:
    """Convert a (batch-1) Keras model; ``mode`` is "float", "int8" or "int16x8" (full integer)."""
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if mode != "float":
        def representative() -> Iterator[list[np.ndarray]]:
            yield from data

        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative
        if mode == "int8":
            converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            converter.inference_input_type = converter.inference_output_type = tf.int8
        elif mode == "int16x8":
            converter.target_spec.supported_ops = [
                tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
            ]
            converter.inference_input_type = converter.inference_output_type = tf.int16
        else:
            raise ValueError(f"unknown mode {mode!r}")
    return bytes(converter.convert())


def conv_bn(x, filters: int, kernel, strides=1, padding: str = "same", act: str | None = "relu"):
    """Conv2D without bias, BatchNorm, optional activation (folded by the converter into one CONV_2D)."""
    x = layers.Conv2D(filters, kernel, strides=strides, padding=padding, use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    return layers.Activation(act)(x) if act else x


def dw_bn(x, kernel=3, strides=1, padding: str = "same", act: str | None = "relu"):
    """DepthwiseConv2D without bias, BatchNorm, optional activation."""
    x = layers.DepthwiseConv2D(kernel, strides=strides, padding=padding, use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    return layers.Activation(act)(x) if act else x


def make_divisible(v: float, divisor: int = 8) -> int:
    """MobileNet's channel rounding: nearest multiple of ``divisor``, never more than 10% below ``v``."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


# ---- the models ---------------------------------------------------------------------------------------------------
# Each builder returns (model, samplers for its inputs, quantization mode).


def mobilenet_v2_pad_int8():
    """MobileNetV2 (alpha 0.35, 96x96x3, 10 classes) with explicit symmetric 1-pixel PADs before every stride-2
    convolution and VALID padding there, as PyTorch exports have."""
    alpha = 0.35
    inp = keras.Input((96, 96, 3), batch_size=1)
    x = layers.ZeroPadding2D(((1, 1), (1, 1)))(inp)
    x = conv_bn(x, make_divisible(32 * alpha), 3, strides=2, padding="valid", act="relu6")
    channels = x.shape[-1]
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)]:
        out = make_divisible(c * alpha)
        for i in range(n):
            stride = s if i == 0 else 1
            y = conv_bn(x, channels * t, 1, act="relu6") if t != 1 else x
            if stride == 2:
                y = layers.ZeroPadding2D(((1, 1), (1, 1)))(y)
                y = dw_bn(y, 3, strides=2, padding="valid", act="relu6")
            else:
                y = dw_bn(y, 3, act="relu6")
            y = conv_bn(y, out, 1, act=None)
            x = layers.Add()([x, y]) if stride == 1 and channels == out else y
            channels = out
    x = conv_bn(x, 1280, 1, act="relu6")
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dense(10)(x)
    x = layers.Softmax()(x)
    return keras.Model(inp, x), [sample_uniform((1, 96, 96, 3), -1.0, 1.0)], "int8"


def vww_mobilenet_96x96x3_int8():
    """MobileNetV1 0.25 Visual Wake Words model with a colour 96x96x3 input (MLPerf Tiny's VWW network)."""
    alpha = 0.25
    inp = keras.Input((96, 96, 3), batch_size=1)
    x = conv_bn(inp, int(32 * alpha), 3, strides=2)
    for filters, stride in [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1), (512, 1),
                            (512, 1), (512, 1), (1024, 2), (1024, 1)]:
        x = dw_bn(x, 3, strides=stride)
        x = conv_bn(x, int(filters * alpha), 1)
    x = layers.AveragePooling2D(pool_size=x.shape[1:3])(x)
    x = layers.Flatten()(x)
    x = layers.Dense(2)(x)
    x = layers.Softmax()(x)
    return keras.Model(inp, x), [sample_uniform((1, 96, 96, 3), 0.0, 1.0)], "int8"


def resnet_tiny_int8():
    """MLPerf Tiny's ResNet-8 for 32x32x3 images: three residual stacks (16, 32, 64 channels) with ADDs."""
    inp = keras.Input((32, 32, 3), batch_size=1)
    x = conv_bn(inp, 16, 3)
    for filters, stride in [(16, 1), (32, 2), (64, 2)]:
        y = conv_bn(x, filters, 3, strides=stride)
        y = conv_bn(y, filters, 3, act=None)
        shortcut = x if stride == 1 else layers.Conv2D(filters, 1, strides=stride)(x)
        x = layers.Activation("relu")(layers.Add()([shortcut, y]))
    x = layers.AveragePooling2D(pool_size=x.shape[1:3])(x)
    x = layers.Flatten()(x)
    x = layers.Dense(10)(x)
    x = layers.Softmax()(x)
    return keras.Model(inp, x), [sample_uniform((1, 32, 32, 3), 0.0, 1.0)], "int8"


def anomaly_autoencoder_int8():
    """MLPerf Tiny's anomaly detector: a 640-128-128-128-128-8-128-128-128-128-640 dense autoencoder."""
    inp = keras.Input((640,), batch_size=1)
    x = inp
    for units in [128, 128, 128, 128, 8, 128, 128, 128, 128]:
        x = layers.Dense(units)(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
    x = layers.Dense(640)(x)
    return keras.Model(inp, x), [sample_uniform((1, 640), -2.0, 2.0)], "int8"


def kws_ds_cnn_int16x8():
    """MLPerf Tiny's keyword-spotting DS-CNN (49x10 MFCC in, 12 classes), int16 activations and int8 weights."""
    inp = keras.Input((49, 10, 1), batch_size=1)
    x = conv_bn(inp, 64, (10, 4), strides=2)
    for _ in range(4):
        x = dw_bn(x, 3)
        x = conv_bn(x, 64, 1)
    x = layers.AveragePooling2D(pool_size=x.shape[1:3])(x)
    x = layers.Flatten()(x)
    x = layers.Dense(12)(x)
    x = layers.Softmax()(x)
    return keras.Model(inp, x), [sample_uniform((1, 49, 10, 1), -1.0, 1.0)], "int16x8"


def float_cnn():
    """A small float32 MNIST-style CNN: conv, max pool, depthwise-separable block, average pool, dense, softmax."""
    inp = keras.Input((28, 28, 1), batch_size=1)
    x = layers.Conv2D(8, 3, activation="relu")(inp)
    x = layers.MaxPooling2D(2)(x)
    x = layers.DepthwiseConv2D(3, padding="same", activation="relu")(x)
    x = layers.Conv2D(16, 1, activation="relu")(x)
    x = layers.AveragePooling2D(2)(x)
    x = layers.Flatten()(x)
    x = layers.Dense(32, activation="relu")(x)
    x = layers.Dense(10)(x)
    x = layers.Softmax()(x)
    return keras.Model(inp, x), [sample_uniform((1, 28, 28, 1), 0.0, 1.0)], "float"


def _lstm_classifier():
    """An MNIST-row LSTM classifier (28 steps of 28 features, 20 units, 10 classes), built with tf-keras.

    Only Keras 2 (tf-keras) LSTMs carry the annotation that makes the converter fuse them into one
    UNIDIRECTIONAL_SEQUENCE_LSTM; a Keras 3 LSTM becomes a WHILE loop (see lstm_keras3_while_float).
    """
    import tf_keras  # pip install tf-keras (same version as tensorflow)

    tf_keras.utils.set_random_seed(int(np.random.randint(1 << 30)))  # numpy was seeded by build()
    inp = tf_keras.Input((28, 28), batch_size=1)
    x = tf_keras.layers.LSTM(20)(inp)
    x = tf_keras.layers.Dense(10)(x)
    x = tf_keras.layers.Softmax()(x)
    return tf_keras.Model(inp, x)


def lstm_float():
    """The LSTM classifier in float32: one fused UNIDIRECTIONAL_SEQUENCE_LSTM."""
    return _lstm_classifier(), [sample_uniform((1, 28, 28), 0.0, 1.0)], "float"


def lstm_int8():
    """The same LSTM classifier, full-integer int8 (the LSTM keeps int16 internal state)."""
    return _lstm_classifier(), [sample_uniform((1, 28, 28), 0.0, 1.0)], "int8"


def lstm_keras3_while_float():
    """The LSTM classifier built with Keras 3, float32: the converter does not fuse it but emits a WHILE loop
    over a cond and a body subgraph (full-integer conversion of it crashes the converter)."""
    inp = keras.Input((28, 28), batch_size=1)
    x = layers.LSTM(20)(inp)
    x = layers.Dense(10)(x)
    x = layers.Softmax()(x)
    return keras.Model(inp, x), [sample_uniform((1, 28, 28), 0.0, 1.0)], "float"


def unet_wide_int8():
    """The TinySeg paper's Tiny U-Net (80x120x3 in, 80x120x1 out) with twice its channels (16-32-64-128)."""
    inp = keras.Input((80, 120, 3), batch_size=1)

    def double_conv(x, filters):
        x = layers.Conv2D(filters, 3, padding="same", activation="relu", kernel_initializer="he_normal")(x)
        return layers.Conv2D(filters, 3, padding="same", activation="relu", kernel_initializer="he_normal")(x)

    skips, x = [], inp
    for filters in [16, 32, 64]:
        x = double_conv(x, filters)
        skips.append(x)
        x = layers.MaxPooling2D(2)(x)
    x = double_conv(x, 128)
    for filters, skip in zip([64, 32, 16], reversed(skips)):
        up = layers.Conv2DTranspose(filters // 2, 2, strides=2)(x)
        x = double_conv(layers.Concatenate()([skip, up]), filters)
    x = layers.Conv2D(1, 1)(x)
    return keras.Model(inp, x), [sample_uniform((1, 80, 120, 3), 0.0, 1.0)], "int8"


def vnet_like_int8():
    """A small 2-D V-Net: residual stages (5x5 convs + ADD), strided-conv downsampling, transposed-conv
    upsampling, skip concatenations, a 2-class softmax per pixel (64x64x1 in, 64x64x2 out)."""
    inp = keras.Input((64, 64, 1), batch_size=1)

    def conv(x, filters, kernel=5, strides=1):
        return layers.Conv2D(filters, kernel, strides=strides, padding="same", activation="relu",
                             kernel_initializer="he_normal")(x)

    def residual(x, filters, n, skip=None):
        y = x if skip is None else layers.Concatenate()([x, skip])
        for _ in range(n):
            y = conv(y, filters)
        return layers.Activation("relu")(layers.Add()([x, y]))

    x = conv(inp, 8)
    skips = []
    for filters, n in [(8, 1), (16, 2), (32, 2)]:
        x = residual(x, filters, n)
        skips.append(x)
        x = conv(x, filters * 2, kernel=2, strides=2)
    x = residual(x, 64, 2)
    for filters, n, skip in zip([32, 16, 8], [2, 2, 1], reversed(skips)):
        x = layers.Conv2DTranspose(filters, 2, strides=2, activation="relu", kernel_initializer="he_normal")(x)
        x = residual(x, filters, n, skip)
    x = layers.Conv2D(2, 1)(x)
    x = layers.Softmax()(x)
    return keras.Model(inp, x), [sample_uniform((1, 64, 64, 1), 0.0, 1.0)], "int8"


BUILDERS = {f.__name__: f for f in [
    mobilenet_v2_pad_int8, vww_mobilenet_96x96x3_int8, resnet_tiny_int8, anomaly_autoencoder_int8,
    kws_ds_cnn_int16x8, float_cnn, lstm_float, lstm_int8, unet_wide_int8, vnet_like_int8,
    lstm_keras3_while_float,
]}


def build(name: str, seed: int) -> bytes:
    """Build, initialise and convert one model with everything seeded by ``seed``."""
    keras.utils.set_random_seed(seed)
    model, samplers, mode = BUILDERS[name]()
    data = calibration_set(samplers, seed)
    init_batch_norms(model, data, seed)
    return convert(model, data, mode)


def main(argv: list[str]) -> int:
    """Build the named models (default: all), each in a fresh subprocess.

    A fresh process per model makes the bytes independent of what else was built: Keras numbers its layer
    names per process, and those names end up in the flatbuffer's tensor names.
    """
    if argv[:1] == ["--one"]:
        name = argv[1]
        blob = build(name, seed=1234 + list(BUILDERS).index(name))
        (OUT / f"{name}.tflite").write_bytes(blob)
        print(f"{name}.tflite: {len(blob):,} bytes")
        return 0
    names = argv or list(BUILDERS)
    unknown = [n for n in names if n not in BUILDERS]
    if unknown:
        print(f"unknown model(s) {unknown}; known: {list(BUILDERS)}", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    for name in names:
        subprocess.run([sys.executable, __file__, "--one", name], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
