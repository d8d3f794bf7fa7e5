"""The reference's initialisers, built from a `TransformerXLConfig`'s init fields."""
import keras


def main_initializer(init: str, init_std: float, init_range: float):
    """Kernels, embedding tables and the u/v biases: N(0, init_std) or U(-r, r)."""
    if init == "uniform":
        return keras.initializers.RandomUniform(-init_range, init_range)
    return keras.initializers.RandomNormal(mean=0.0, stddev=init_std)


def projection_initializer(init: str, proj_init_std: float, init_range: float):
    """Adaptive embedding / softmax projections: N(0, proj_init_std) or U(-r, r)."""
    if init == "uniform":
        return keras.initializers.RandomUniform(-init_range, init_range)
    return keras.initializers.RandomNormal(mean=0.0, stddev=proj_init_std)
