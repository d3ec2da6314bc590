"""The gradient detectors on small real PyTorch runs of architectures other than MLPs:
an embedding + GRU language model, a Transformer encoder (attention, LayerNorm), a deep tanh
stack, a recurrent net that explodes, and one corrupt batch that spikes the gradient norm.

Recorded through ``recorders.torch.Recorder`` and read back from disk, once per module; the
healthy twins must stay silent on every gradient code. Each run must show its fault (or none) in
torch before its verdict is looked at, else the next seed is tried (``real_training``).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from real_training import diagnose_scenarios, explodes, faultless, one_step_spike, vanishes, warning_codes  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

OURS = ("vanishing_gradients", "exploding_gradients", "dead_layers", "learning_rate_too_low",
        "learning_rate_too_high", "weight_norm_growth", "grad_norm_spike", "nonfinite_gradient")
VOCAB, SEQ = 40, 16


class LM(nn.Module):
    def __init__(self, cell: str = "gru", hidden: int = 48) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.rnn = (nn.GRU if cell == "gru" else nn.RNN)(32, hidden, batch_first=True)
        self.head = nn.Linear(hidden, VOCAB)

    def forward(self, x):
        return self.head(self.rnn(self.embed(x))[0])


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.blocks = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True), 2, enable_nested_tensor=False)
        self.head = nn.Linear(32, VOCAB)

    def forward(self, x):
        return self.head(self.blocks(self.embed(x)))


def _sequences(seed: int = 0, n: int = 512):
    g = torch.Generator().manual_seed(seed)
    start = torch.randint(0, VOCAB, (n, 1), generator=g)
    step = torch.randint(1, 4, (n, 1), generator=g)
    return (start + step * torch.arange(SEQ + 1)) % VOCAB  # learnable: each sequence counts on


def _lm_loss(data, corrupt_at: int | None = None):
    calls = {"n": 0}

    def fn(model, g):
        idx = torch.randint(0, len(data), (32,), generator=g)
        x, y = data[idx, :-1], data[idx, 1:]
        calls["n"] += 1
        return F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
    return fn


def _deep_tanh(depth: int = 14, width: int = 64):
    layers = []
    for i in range(depth):
        lin = nn.Linear(32 if i == 0 else width, width)
        nn.init.normal_(lin.weight, std=0.5 / width ** 0.5)  # gain well below tanh's 5/3: signal decays per layer
        layers += [lin, nn.Tanh()]
    return nn.Sequential(*layers, nn.Linear(width, 10))


def _clf(seed=0, n=1024, corrupt_at=None):
    g0 = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 32, generator=g0)
    y = (x[:, :10] @ torch.randn(10, 10, generator=g0)).argmax(1)
    calls = {"n": 0}

    def fn(model, g):
        idx = torch.randint(0, n, (64,), generator=g)
        xb = x[idx]
        calls["n"] += 1
        if calls["n"] == corrupt_at:
            xb = xb * 1e4  # one corrupt batch: inputs in the wrong units
        return F.cross_entropy(model(xb), y[idx])
    return fn


def _scenarios():
    data = _sequences()

    def healthy_gru():
        m = LM("gru")
        return m, torch.optim.Adam(m.parameters(), 3e-3), 200, _lm_loss(data)

    def healthy_transformer():
        m = Encoder()
        return m, torch.optim.AdamW(m.parameters(), 1e-3), 150, _lm_loss(data)

    def deep_tanh():
        m = _deep_tanh()
        return m, torch.optim.SGD(m.parameters(), 0.05), 150, _clf()

    def exploding_rnn(gain):
        def make():
            m = LM("rnn", hidden=64)
            m.rnn = nn.RNN(32, 64, batch_first=True, nonlinearity="relu")
            with torch.no_grad():  # recurrent gain above 1: gradients grow through time, and the run ends
                m.rnn.weight_hh_l0.copy_(gain * torch.eye(64) + 0.01 * torch.randn(64, 64))
            return m, torch.optim.SGD(m.parameters(), 0.05), 150, _lm_loss(data)
        make.__name__ = f"exploding_rnn_{gain:g}"
        return make

    def spiked_mlp():
        m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
        return m, torch.optim.SGD(m.parameters(), 1e-3, momentum=0.9), 200, _clf(corrupt_at=120)

    return {f.__name__: f for f in (healthy_gru, healthy_transformer, deep_tanh, exploding_rnn(1.5),
                                    exploding_rnn(2), spiked_mlp)}


# What each run must show in torch before its verdict is looked at (real_training's truths).
TRUTHS = {"healthy_gru": faultless, "healthy_transformer": faultless, "deep_tanh": vanishes,
          "exploding_rnn_1.5": explodes, "exploding_rnn_2": explodes, "spiked_mlp": one_step_spike(119)}


@pytest.fixture(scope="module")
def diagnoses(tmp_path_factory):
    """``diagnoses(name)``: the scenario's diagnosis, once its run showed its truth in torch."""
    trained = diagnose_scenarios(tmp_path_factory.mktemp("archs"), _scenarios(), TRUTHS, stop_on_nonfinite=True)
    return lambda name: trained[name].checked()


def _codes(diag):
    return warning_codes(diag, OURS)


@pytest.mark.parametrize("name", ["healthy_gru", "healthy_transformer"])
def test_healthy_recurrent_and_attention_models_are_silent(diagnoses, name):
    assert _codes(diagnoses(name)) == set(), [f.title for f in diagnoses(name).findings]


def test_deep_tanh_stack_vanishes(diagnoses):
    [f] = [f for f in diagnoses("deep_tanh").findings if f.code == "vanishing_gradients"]
    assert f.evidence["decades"] >= 2


@pytest.mark.parametrize("name", ["exploding_rnn_1.5", "exploding_rnn_2"])
def test_recurrent_net_that_explodes_within_a_few_steps(diagnoses, name):
    # gain 1.5: the norm climbs ~16 decades in three steps; gain 2: one finite step that moved
    # the weights by their own size, then Inf.
    assert "exploding_gradients" in _codes(diagnoses(name)), [f.title for f in diagnoses(name).findings]


def test_one_corrupt_batch_is_a_gradient_norm_spike(diagnoses):
    found = [f for f in diagnoses("spiked_mlp").findings if f.code == "grad_norm_spike"]
    assert [f.step for f in found] == [119], [f.title for f in diagnoses("spiked_mlp").findings]
    assert found[0].evidence["ratio"] >= 100
    assert "exploding_gradients" not in _codes(diagnoses("spiked_mlp"))
