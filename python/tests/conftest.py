import numpy as np
import pytest

import surfgrad as sg


@pytest.fixture(scope="session", autouse=True)
def _device():
    # One context for the session; its creation (adapter, device, subgroup probe) is paid once.
    info = sg.device()
    print(f"surfgrad on {info['adapter']} ({info['backend']})")
    return info


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def clusters(n_per=60, centers=4, dim=12, seed=0, spread=12.0):
    """Well-separated Gaussian clusters: points [n, dim] float32 and labels [n]."""
    rng = np.random.default_rng(seed)
    means = rng.normal(size=(centers, dim)) * spread
    labels = np.repeat(np.arange(centers), n_per)
    X = (means[labels] + rng.normal(size=(labels.size, dim))).astype(np.float32)
    return X, labels
