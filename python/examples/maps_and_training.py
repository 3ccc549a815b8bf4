# %% [markdown]
# # surfgrad from Python: tensors, a small network, and maps of embeddings
#
# Run as a script (`python maps_and_training.py [--quick]`) or cell by cell in a notebook
# (the `# %%` markers are Jupyter / VS Code cells). Needs numpy; uses scikit-learn's bundled
# digits when installed (no download), tqdm for progress bars and matplotlib for the plots
# when they are there.

# %%
import sys
import time

import numpy as np

import surfgrad as sg

quick = "--quick" in sys.argv  # CI: fewer iterations, same code paths
info = sg.device()
print(f"{info['adapter']} ({info['backend']}, {info['adapter_type']}), f16: {info['features']['shader_f16']}")

# %% [markdown]
# ## Tensors and gradients, with PyTorch's names

# %%
x = sg.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
y = (x @ x.T).tanh().sum()
y.backward()
print("y =", y.item(), "\ndy/dx =\n", x.grad.numpy())

# %% [markdown]
# ## Two moons: an MLP trained on the GPU (the C++ demo `surfgrad demo moons`, in Python)

# %%
rng = np.random.default_rng(0)
t = rng.uniform(0, np.pi, 1000)
upper = rng.random(1000) < 0.5
X = np.where(upper[:, None], np.c_[np.cos(t), np.sin(t)], np.c_[1 - np.cos(t), 0.5 - np.sin(t)])
X = (X + rng.normal(scale=0.1, size=X.shape)).astype(np.float32)
labels = upper.astype(np.int32)

model = sg.nn.mlp([2, 64, 64, 2], seed=0)
opt = sg.optim.Adam(model.parameters(), lr=0.01)
inputs, targets = sg.tensor(X), sg.tensor(labels)
for step in range(100 if quick else 400):
    loss = sg.nn.cross_entropy(model(inputs), targets)
    opt.zero_grad()
    loss.backward()
    opt.step()
with sg.no_grad():
    accuracy = (model(inputs).argmax(dim=1).numpy() == labels).mean()
print(f"two moons: loss {loss.item():.2e}, training accuracy {accuracy:.1%}")

# %% [markdown]
# ## t-SNE and UMAP of the digits (1,797 images of 8×8 pixels)

# %%
try:
    from sklearn.datasets import load_digits

    digits = load_digits()
    points, digit = digits.data, digits.target
except ImportError:  # clusters in 64-D instead
    centers = rng.normal(size=(10, 64)) * 6
    digit = np.repeat(np.arange(10), 150)
    points = centers[digit] + rng.normal(size=(digit.size, 64))

maps = {}
for est in (sg.TSNE(perplexity=30, max_iter=250 if quick else 750, random_state=0, verbose=not quick),
            sg.UMAP(n_neighbors=15, n_epochs=100 if quick else None, random_state=0, verbose=not quick)):
    start = time.perf_counter()
    maps[type(est).__name__] = est.fit_transform(points)
    phases = ", ".join(f"{k} {v:.2f}" for k, v in est.timings_.items())
    print(f"{type(est).__name__}: {time.perf_counter() - start:.2f} s ({phases})")


def nn_accuracy(Y, labels):
    """Share of points whose nearest neighbour in the map has the same label."""
    d = ((Y[:, None] - Y[None]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    return (labels[d.argmin(1)] == labels).mean()


for name, Y in maps.items():
    print(f"{name}: 1-NN accuracy in the map {nn_accuracy(Y, digit):.1%}")

# %%
try:
    import matplotlib.pyplot as plt
except ImportError:
    plt = None
if plt is not None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 6))
    for ax, (name, Y) in zip(axes, maps.items()):
        sg.plot(Y, digit, ax=ax)
        ax.set_title(name)
    fig.savefig("digits_maps.png", dpi=100)
    print("wrote digits_maps.png")
