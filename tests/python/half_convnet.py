"""The small convnet the half-precision checks build under a Keras mixed
policy (`keras_sequence.py bf16|f16`, `tf_half_fused.py`,
`half_vs_float32.py`): Conv2D(relu) -> pool -> Dense, a float32 softmax."""


def half_convnet(keras):
    layers = keras.layers
    return keras.Sequential([
        keras.Input((28, 28, 1)),
        layers.Conv2D(8, 3, activation="relu"),
        layers.MaxPooling2D(),
        layers.Flatten(),
        layers.Dense(10),
        layers.Activation("softmax", dtype="float32"),
    ])
