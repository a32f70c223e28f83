"""The seed workloads at tiny sizes, with the plain in-process Recorder.

resnet_order runs mostly on torchvision's mobilenet_v3_small at 32×32 (the
``arch``/``image_size`` parameters exist for this); one test runs the seed's
real ResNet-50 at batch 2.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os

import pytest
import torch

from benchctl import _workloads as workloads
from benchctl.denormals import layer_census, weights_census
from benchctl._run.recorder import Recorder
from benchctl._workloads import resnet_order, weights, zero_weights
from conftest import require_gpu

TINY = {"arch": "mobilenet_v3_small", "image_size": 32, "batch_size": 2, "num_data": 4, "weights": "random"}


def run(name: str, **given):
    workload = workloads.get(name)
    rec = Recorder()
    workload.fn(workload.resolve_args(given), rec)
    return rec


def is_subnormal_bits(t: torch.Tensor) -> torch.Tensor:
    """Float32 subnormal test by bit pattern: exponent bits zero, mantissa non-zero."""
    bits = t.detach().contiguous().view(torch.int32)
    return ((bits & 0x7F800000) == 0) & ((bits & 0x007FFFFF) != 0)


def conv_weights(model):
    return {n: m.weight for n, m in model.named_modules() if isinstance(m, torch.nn.Conv2d)}


# --- resnet_order -----------------------------------------------------------

def test_both_workloads_are_registered():
    assert {"resnet_order", "zero_weights"} <= set(workloads.names())


@pytest.mark.slow
def test_eval_only_times_eval_forward_per_batch():
    rec = run("resnet_order", order="eval_only", **TINY)
    assert set(rec.ticks) == {"eval"}
    assert len(rec.ticks["eval"]) == 2 and all(t > 0 for t in rec.ticks["eval"])
    assert rec.notes["batches"] == {"eval": 2, "train": 0}
    assert rec.notes["weights"]["used"] == "random"


@pytest.mark.slow
def test_train_then_eval_times_both_phases_and_trains():
    rec = run("resnet_order", order="train_then_eval", **TINY)
    assert set(rec.ticks) == {"train", "eval"}
    assert len(rec.ticks["train"]) == 2 and len(rec.ticks["eval"]) == 2
    assert all(t > 0 for t in rec.ticks["train"] + rec.ticks["eval"])


@pytest.mark.slow
def test_train_batches_stops_training_early():
    rec = run("resnet_order", order="train_then_eval", train_batches=1, **TINY)
    assert len(rec.ticks["train"]) == 1 and len(rec.ticks["eval"]) == 2
    assert rec.notes["batches"] == {"eval": 2, "train": 1}


@pytest.mark.slow
def test_training_really_updates_the_weights(monkeypatch):
    # The same seeded model before and after the train loop must differ,
    # otherwise train_then_eval would be eval twice.
    args = workloads.get("resnet_order").resolve_args({"order": "train_then_eval", **TINY})
    before, _ = resnet_order.build_model(args)
    built = []
    original = resnet_order.build_model
    monkeypatch.setattr(resnet_order, "build_model", lambda a: built.append(original(a)) or built[-1])
    workloads.get("resnet_order").fn(args, Recorder())
    trained = built[0][0]
    reference = dict(before.named_parameters())
    changed = [n for n, p in trained.named_parameters() if not torch.equal(p.detach(), reference[n].detach())]
    assert changed, "no parameter changed during training"


@pytest.mark.slow
def test_real_resnet50_eval_at_batch_2():
    rec = run("resnet_order", order="eval_only", batch_size=2, num_data=2, weights="random")
    assert len(rec.ticks["eval"]) == 1 and rec.ticks["eval"][0] > 0


class _ChildrenWatch(Recorder):
    """A Recorder that counts this process's live child processes (a DataLoader's workers) as each
    iteration starts."""

    def __init__(self) -> None:
        super().__init__()
        self.children: list[tuple[str, int]] = []

    @contextlib.contextmanager
    def iteration(self, phase):
        self.children.append((phase, len(multiprocessing.active_children())))
        with super().iteration(phase):
            yield


@pytest.mark.slow
@pytest.mark.parametrize("load_first", [True, False])
def test_load_first_ends_the_loaders_worker_before_the_timed_iterations(load_first):
    rec = _ChildrenWatch()
    before = len(multiprocessing.active_children())
    workloads.get("resnet_order").fn(workloads.get("resnet_order").resolve_args(
        {**TINY, "order": "train_then_eval", "load_first": load_first}), rec)
    assert [phase for phase, _ in rec.children] == ["train", "train", "eval", "eval"]
    # Streamed (the seed's way) the worker is still making batches while the forward passes are timed.
    assert [n - before for _, n in rec.children] == ([0] * 4 if load_first else [1] * 4)


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"load_first": 2}, "load_first must be true or false; got 2"),
        ({"order": "eval_first"}, "order must be one of eval_only, train_then_eval"),
        ({"batch_size": 0}, "batch_size must be >= 1"),
        ({"num_data": 1, "batch_size": 2}, "num_data (1) must be at least batch_size (2)"),
        ({"device": "tpu"}, "device must be one of cpu, cuda"),
        ({"train_batches": 0}, "train_batches must be >= 1, got 0 (or None)"),
    ],
)
def test_resnet_order_rejects_bad_arguments(bad, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run("resnet_order", **{**TINY, **bad})


# --- weights ----------------------------------------------------------------

def tiny_model(weights_spec: str, seed: int = 0):
    args = workloads.get("resnet_order").resolve_args({**TINY, "weights": weights_spec, "seed": seed})
    return resnet_order.build_model(args)


def test_saved_state_dict_loads_through_path(tmp_path):
    source, _ = tiny_model("random", seed=1)
    path = tmp_path / "weights.pt"
    torch.save(source.state_dict(), path)
    loaded, info = tiny_model(str(path), seed=0)
    fresh, _ = tiny_model("random", seed=0)
    assert info["used"] == "path" and info["source"] == str(path)
    for name, value in source.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], value), name
    assert not torch.equal(fresh.state_dict()["features.0.0.weight"], source.state_dict()["features.0.0.weight"])


def test_path_that_is_not_a_state_dict_is_refused(tmp_path):
    path = tmp_path / "tensor.pt"
    torch.save(torch.zeros(3), path)
    with pytest.raises(ValueError, match="not a state dict"):
        tiny_model(str(path))


@pytest.mark.parametrize(
    "spec, message",
    [
        ("subnormal:abc", "is not a number"),
        ("subnormal:0", r"must be in \(0, 1\]"),
        ("subnormal:1.5", r"must be in \(0, 1\]"),
        ("no/such/file.pt", "neither one of auto, imagenet, random, subnormal:F nor an existing"),
        ("", "weights must be one of"),
    ],
)
def test_bad_weight_specs_are_refused(spec, message):
    with pytest.raises(ValueError, match=message):
        weights.parse_spec(spec)


def test_subnormal_planting_plants_the_fraction_per_conv_weight():
    model, info = tiny_model("subnormal:0.1")
    assert info["used"] == "subnormal"
    convs = conv_weights(model)
    assert set(info["planted"]) == {f"{name}.weight" for name in convs}
    for name, weight in convs.items():
        found = int(is_subnormal_bits(weight).sum())
        # The random init holds no subnormals of its own (checked below), so the
        # count is exactly what was planted: round(0.1 * numel).
        assert found == info["planted"][f"{name}.weight"] == round(0.1 * weight.numel()), name


def test_random_init_has_no_subnormals_to_begin_with():
    model, _ = tiny_model("random")
    assert all(int(is_subnormal_bits(w).sum()) == 0 for w in conv_weights(model).values())


def test_subnormal_planting_survives_flush_to_zero_on_the_calling_thread():
    # Values made by float conversion would be flushed to 0 here; bit patterns are not.
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU cannot set FTZ through torch")
    try:
        model, info = tiny_model("subnormal:0.1")
    finally:
        torch.set_flush_denormal(False)
    total = sum(int(is_subnormal_bits(w).sum()) for w in conv_weights(model).values())
    assert total == sum(info["planted"].values()) > 0


def test_weights_census_counts_planted_subnormals():
    model, info = tiny_model("subnormal:0.1")
    census = weights_census(model)
    conv_values = sum(w.numel() for w in conv_weights(model).values())
    assert census["subnormal"] == sum(info["planted"].values())
    assert census["subnormal"] == pytest.approx(0.1 * conv_values, rel=0.01)


def test_imagenet_offline_fails_naming_the_cache_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    monkeypatch.setenv(weights.OFFLINE_ENV, "1")
    expected = tmp_path / "hub" / "checkpoints" / "resnet50-0676ba61.pth"
    with pytest.raises(weights.WeightsUnavailable) as err:
        run("resnet_order", order="eval_only", batch_size=2, num_data=2, weights="imagenet")
    message = str(err.value)
    assert str(expected) in message
    assert "https://download.pytorch.org/models/resnet50-0676ba61.pth" in message
    assert "--weights random" in message


def test_auto_uses_cached_imagenet_file_else_random(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    monkeypatch.setenv(weights.OFFLINE_ENV, "1")
    _, info = tiny_model("auto")
    assert info["used"] == "random" and "no cached ImageNet weights" in info["why"]

    # A state dict placed where torchvision looks is what 'auto' then loads.
    source, _ = tiny_model("random", seed=7)
    cache_file = weights.imagenet_cache_file("mobilenet_v3_small")
    os.makedirs(os.path.dirname(cache_file))
    torch.save(source.state_dict(), cache_file)
    model, info = tiny_model("auto")
    assert info["used"] == "imagenet" and info["source"] == "cache " + cache_file
    assert torch.equal(model.state_dict()["classifier.3.weight"], source.state_dict()["classifier.3.weight"])


# --- zero_weights -----------------------------------------------------------

SMALL = {"iterations": 3, "naive_trials": 3}


def test_zero_weights_net_is_the_seeds():
    net = zero_weights.build_net()
    convs = [m for m in net if isinstance(m, torch.nn.Conv2d)]
    assert len(convs) == 11 and sum(isinstance(m, torch.nn.ReLU) for m in net) == 10
    assert (convs[0].in_channels, convs[0].out_channels) == (3, 64)
    assert all((c.in_channels, c.out_channels, c.kernel_size, c.padding, c.bias) == (64, 64, (3, 3), (1, 1), None)
               for c in convs[1:])


def test_zero_weights_backward_really_runs_for_uniform_weights():
    rec = run("zero_weights", init="uniform", **SMALL)
    assert len(rec.ticks["forward"]) == 3 and len(rec.ticks["forward_backward"]) == 3
    grads = rec.notes["gradients"]
    assert len(grads) == 11
    assert all(g["exists"] and g["nonzero"] > 0 and g["max_abs"] > 0 for g in grads.values())


def test_zero_weights_with_zero_init_has_zero_gradients():
    # Zero weights give zero activations, and ReLU passes no gradient at 0:
    # backward runs (gradients exist) but every entry is 0.
    rec = run("zero_weights", init="zero", **SMALL)
    assert all(g["exists"] and g["nonzero"] == 0 for g in rec.notes["gradients"].values())


@pytest.mark.slow
def test_zero_weights_records_the_seeds_naive_timing_beside_the_real_one():
    rec = run("zero_weights", init="zero", **SMALL)
    naive = rec.notes["naive_seed_timing"]
    assert naive["trials"] == 3 and naive["forward_ms"] > 0 and naive["seed_forward_backward_ms"] > 0
    assert naive["seed_backward_called"] is False
    assert "without parentheses" in rec.notes["seed_backward_bug"]
    assert all(t > 0 for t in rec.ticks["forward"] + rec.ticks["forward_backward"])


def test_layer_census_shows_uniform_init_growth_and_removes_its_hooks():
    torch.manual_seed(0)
    net = zero_weights.build_net()
    zero_weights.init_weights(net, "uniform")
    profile = layer_census(net, torch.randn(zero_weights.INPUT_SHAPE))
    assert [r["layer"] for r in profile][:3] == ["conv_0", "conv_1", "relu_1"]
    assert len(profile) == 21
    # Each uniform[0,1) 3×3×64 conv multiplies magnitudes by ~100.
    assert profile[-1]["max_abs"] > 1e6 * profile[0]["max_abs"]
    assert all(not m._forward_hooks for m in net.modules())


def test_zero_weights_rejects_bad_arguments():
    with pytest.raises(ValueError, match="init must be one of uniform, zero"):
        run("zero_weights", init="normal", **SMALL)
    with pytest.raises(ValueError, match="iterations must be >= 1"):
        run("zero_weights", iterations=0)


# --- device -----------------------------------------------------------------

@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU error")
@pytest.mark.parametrize("name", ["resnet_order", "zero_weights"])
def test_cuda_without_a_gpu_fails_clearly(name):
    given = {**TINY, "order": "eval_only"} if name == "resnet_order" else SMALL
    with pytest.raises(RuntimeError, match=r"device=cuda but torch sees no CUDA device"):
        run(name, device="cuda", **given)


@pytest.fixture
def gpu():
    require_gpu()


@pytest.mark.cuda
def test_zero_weights_on_cuda_records_event_times_and_the_gpu(gpu):
    rec = run("zero_weights", device="cuda", init="zero", **SMALL)
    events = rec.notes["cuda_event_ms"]
    assert events["forward"]["available"] and len(events["forward"]["ms"]) == SMALL["iterations"]
    assert all(ms > 0 for ms in events["forward_backward"]["ms"])
    assert rec.notes["gpu"]["name"]
    assert len(rec.ticks["forward"]) == SMALL["iterations"]


@pytest.mark.cuda
def test_resnet_order_on_cuda_times_both_phases(gpu):
    rec = run("resnet_order", device="cuda", order="train_then_eval", **TINY)
    assert len(rec.ticks["train"]) == 2 and len(rec.ticks["eval"]) == 2
    assert rec.notes["pin_memory"]["effective"] and rec.notes["gpu"]["name"]
