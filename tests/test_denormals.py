"""Counting subnormals in tensors and models, by bit pattern."""

import pytest
import torch
from torch import nn

from benchctl import denormals, fpenv

# (dtype, integer view, planted subnormal bit patterns, other patterns: zeros, normals, inf, nan)
CASES = [
    (torch.float16, torch.int16, [0x0001, 0x03FF, -0x7FFF, 0x0200], [0x0000, -0x8000, 0x0400, 0x3C00, 0x7C00, 0x7E00]),
    (torch.bfloat16, torch.int16, [0x0001, 0x007F, -0x7FC0], [0x0000, 0x0080, 0x3F80, 0x7F80, 0x7FC0]),
    (torch.float32, torch.int32, [0x00000001, 0x007FFFFF, 0x00100000, -0x7FFFFFFB],
     [0x00000000, 0x00800000, 0x3F800000, 0x7F800000, 0x7FC00000]),
    (torch.float64, torch.int64, [1, 0x000FFFFFFFFFFFFF, -0x7FFFFFFFFFFFFFFF],
     [0, 0x0010000000000000, 0x3FF0000000000000, 0x7FF0000000000000]),
]


def planted(dtype, int_dtype, subnormal_bits, other_bits, repeat=5):
    bits = torch.tensor((subnormal_bits + other_bits) * repeat, dtype=int_dtype)
    return bits.view(dtype), len(subnormal_bits) * repeat


@pytest.mark.parametrize("dtype,int_dtype,sub,other", CASES, ids=lambda c: str(c))
def test_count_subnormal_finds_exactly_the_planted_values(dtype, int_dtype, sub, other):
    t, expected = planted(dtype, int_dtype, sub, other)
    assert t.dtype == dtype
    assert denormals.count_subnormal(t) == expected
    every_other = sum(1 for bits in ((sub + other) * 5)[::2] if bits in sub)
    assert denormals.count_subnormal(t[::2]) == every_other  # a strided view
    assert denormals.count_subnormal(t.reshape(-1, 5).t()) == expected  # a transposed one
    assert denormals.count_subnormal(t[:0]) == 0


@pytest.mark.skipif(fpenv.thread_state()["daz"] is None, reason="this CPU has no separate DAZ control")
def test_counting_is_right_under_daz_where_float_comparisons_are_not():
    t, expected = planted(*CASES[2])
    try:
        fpenv.set_thread_state(ftz=False, daz=True)
        naive = int(((t != 0) & (t.abs() < torch.finfo(torch.float32).tiny)).sum())
        assert denormals.count_subnormal(t) == expected
        assert naive < expected  # DAZ reads the subnormals as zero
    finally:
        fpenv.set_thread_state(False, False)


def test_count_subnormal_refuses_what_it_cannot_count():
    with pytest.raises(TypeError, match="float16, bfloat16, float32, float64"):
        denormals.count_subnormal(torch.zeros(3, dtype=torch.int32))
    with pytest.raises(TypeError, match="torch.Tensor"):
        denormals.count_subnormal([0.0, 1e-40])


def set_bits(t, flat_indices, bits):
    view = t.detach().view(-1).view(torch.int32)
    for i in flat_indices:
        view[i] = bits


class SmallConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.copy = nn.Conv2d(1, 1, 1, bias=False)  # weight 1: output = input, bit for bit
        self.bn = nn.BatchNorm2d(1)
        self.act = nn.ReLU()
        self.head = nn.Conv2d(1, 2, 3)

    def forward(self, x):
        return self.head(self.act(self.copy(x)))


def make_net():
    torch.manual_seed(0)
    net = SmallConvNet().eval()
    with torch.no_grad():
        net.copy.weight.fill_(1.0)
        net.head.weight.fill_(0.25)
        net.head.bias.fill_(1.0)
        set_bits(net.head.weight, [0, 5, 17], 0x00000010)  # 3 subnormal weights
        set_bits(net.head.bias, [1], 0x00000200)  # 1 subnormal bias
        set_bits(net.bn.running_mean, [0], 0x00000003)  # 1 subnormal buffer
    return net


def test_model_census_counts_planted_parameters_and_buffers():
    census = denormals.model_census(make_net())
    assert census["parameters"]["head.weight"]["subnormal"] == 3
    assert census["parameters"]["head.weight"]["numel"] == 18
    assert census["parameters"]["head.weight"]["fraction"] == pytest.approx(3 / 18)
    assert census["parameters"]["head.bias"]["subnormal"] == 1
    assert census["parameters"]["copy.weight"]["subnormal"] == 0
    assert census["buffers"]["bn.running_mean"]["subnormal"] == 1
    assert "bn.num_batches_tracked" not in census["buffers"]  # integer: nothing to count
    assert census["totals"]["parameters"]["subnormal"] == 4
    assert census["totals"]["buffers"]["subnormal"] == 1
    assert "activations" not in census


def test_model_census_counts_layer_outputs_and_removes_its_hooks():
    assert not fpenv.thread_state()["ftz"]
    net = make_net()
    x = torch.full((1, 1, 6, 6), 1.0)
    set_bits(x, [0, 1, 2, 3, 4], 0x00000100)  # 5 positive subnormals
    set_bits(x, [10, 11], -0x7FFFFF00)  # 2 negative ones: ReLU makes them zero
    census = denormals.model_census(net, x)
    acts = census["activations"]
    assert set(acts) == {"copy", "bn", "act", "head"}
    assert {k: acts["copy"][k] for k in ("layer", "type", "calls", "numel", "subnormal", "fraction")} == {
        "layer": "copy", "type": "Conv2d", "calls": 1, "numel": 36, "subnormal": 7, "fraction": 7 / 36}
    assert acts["act"]["subnormal"] == 5
    assert acts["bn"]["calls"] == 0  # defined but not used by forward
    assert acts["head"]["numel"] == 2 * 4 * 4
    assert census["totals"]["activations"]["subnormal"] == 12 + acts["head"]["subnormal"]
    assert all(not m._forward_hooks for m in net.modules())


def test_model_census_removes_its_hooks_when_forward_fails():
    net = make_net()
    with pytest.raises(RuntimeError):
        denormals.model_census(net, torch.zeros(1, 3, 6, 6))  # wrong channel count
    assert all(not m._forward_hooks for m in net.modules())


def test_model_census_accepts_argument_tuples_and_rejects_non_modules():
    lin = nn.Bilinear(2, 2, 1)
    census = denormals.model_census(lin, (torch.ones(1, 2), torch.ones(1, 2)))
    assert census["activations"][""]["calls"] == 1
    with pytest.raises(TypeError, match="nn.Module"):
        denormals.model_census(lambda x: x)


def test_op_inputs_census_counts_what_the_ops_read_each_tensor_once():
    # A global of subnormal inputs: the conv's output is normal (its bias), so a census of outputs alone reads 0.
    conv = nn.Conv2d(2, 2, 3, padding=1)
    x = torch.full((1, 2, 4, 4), 1e-39)
    assert denormals.count_subnormal(x) == 32

    def step():
        with torch.no_grad():
            y = conv(x)
            return y + conv(x)  # x and the weights read twice: counted once

    assert denormals.values_census(step())["subnormal"] == 0
    got = denormals.op_inputs_census(step)
    weights = sum(p.numel() for p in conv.parameters())
    assert got["subnormal"] == 32
    # x, the weights and bias, and the sum's two operands (each conv's own output); the counting's own ops are not.
    assert got["values"] == 32 + weights + 2 * 32


def test_op_inputs_census_counts_new_values_in_reused_memory_and_changes_made_in_place():
    """A state decaying through the subnormal range: each product is a new tensor in a block a freed one held (the
    census counted only the first two, normal, values by address and found 0 subnormals), or the same tensor
    changed in place (its version counter): the values each op read are counted, the subnormal ones among them."""
    x0 = torch.full((1024,), 1e-30)
    y, subnormal_reads = x0, 0  # what the loop's multiplies read: from k = 52 on, 1e-30 * 0.7**k is subnormal
    for _ in range(100):
        subnormal_reads += denormals.count_subnormal(y)
        y = y * 0.7

    def decay():
        y = x0
        for _ in range(100):
            y = y * 0.7
        return y

    def decay_in_place():
        y = x0.clone()
        for _ in range(100):
            y.mul_(0.7)
        return y

    got = denormals.op_inputs_census(decay)
    assert got["values"] == 100 * 1024 and got["densest"] == 1.0
    assert got["subnormal"] == subnormal_reads > 0
    in_place = denormals.op_inputs_census(decay_in_place)
    assert in_place["values"] == 101 * 1024 and in_place["subnormal"] == got["subnormal"]  # x0 read by clone()
    with torch.inference_mode():  # inference tensors have no version counter
        assert denormals.op_inputs_census(decay)["subnormal"] == got["subnormal"]


def test_op_inputs_census_leaves_out_what_an_op_only_writes_or_only_measures():
    """A model built inside the call: torch.empty's memory, whatever it held, is overwritten by torch.nn.init
    (through a view for a fan-in), never read by the arithmetic; counted, its leftovers read as subnormal inputs
    (611 of a Linear(512, 1024)'s 526k values once)."""
    garbage = torch.full((64,), 1e-40)
    src = torch.ones(64)

    def census(step):
        garbage.fill_(1e-40)
        return denormals.op_inputs_census(step)["subnormal"]

    for only_writes in (lambda: torch.nn.init.uniform_(garbage), lambda: garbage.normal_(),
                        lambda: torch.nn.init.kaiming_uniform_(garbage.view(8, 8)),
                        lambda: torch.nn.init.xavier_normal_(garbage.view(8, 8)), lambda: garbage.fill_(1.0),
                        lambda: garbage.copy_(src), lambda: torch.add(src, src, out=garbage),
                        lambda: (garbage.shape, garbage.size(0), garbage.dim(), len(garbage))):
        assert census(only_writes) == 0
    for reads in (lambda: garbage.add_(1.0), lambda: garbage * 2, lambda: garbage.view(8, 8).t() @ src.view(8, 8),
                  lambda: src.copy_(garbage)):
        assert census(reads) == 64


def test_censuses_give_the_largest_share_of_subnormals_in_one_tensor_and_count_float16_apart():
    few = torch.ones(1000)
    few[:3] = 1e-39
    assert denormals.values_census([few, torch.full((10,), 1e-39)]) == {
        "values": 1010, "subnormal": 13, "float16_subnormal": 0, "densest": 1.0}
    assert denormals.values_census(few)["densest"] == pytest.approx(0.003)
    # float16's subnormals (below 6.1e-5) are counted, and apart: no share of them is the densest.
    half = torch.full((8,), 3e-6, dtype=torch.float16)
    assert denormals.values_census([few, half]) == {"values": 1008, "subnormal": 11, "float16_subnormal": 8,
                                                    "densest": pytest.approx(0.003)}
    lin = nn.Linear(4, 4)
    with torch.no_grad():
        lin.weight[0, 0] = 1e-39
    assert denormals.weights_census(lin)["densest"] == pytest.approx(1 / 16)
    assert denormals.activation_census(lin, torch.ones(1, 4))["densest"] == 0.0
    assert denormals.op_inputs_census(lambda: lin(few[:4]))["densest"] == pytest.approx(3 / 4)
    half_lin = nn.Linear(4, 4).half()
    with torch.no_grad():
        half_lin.weight.fill_(3e-6)
        half_lin.bias.zero_()
    weights = denormals.weights_census(half_lin)
    assert weights["subnormal"] == weights["float16_subnormal"] == 16 and weights["densest"] == 0.0
    acts = denormals.activation_census(half_lin, torch.ones(1, 4, dtype=torch.float16))
    assert acts["subnormal"] == acts["float16_subnormal"] == 4 and acts["densest"] == 0.0  # 4 x 3e-6 each
    assert denormals.layer_census(half_lin, torch.ones(1, 4, dtype=torch.float16))[0]["dtype"] == "float16"


def test_op_inputs_census_counts_nothing_without_torch_calls_and_propagates_the_calls_error():
    nothing = {"values": 0, "subnormal": 0, "float16_subnormal": 0, "densest": 0.0}
    assert denormals.op_inputs_census(lambda: sorted(range(10))) == nothing
    meta = torch.empty(4, device="meta")
    assert denormals.op_inputs_census(lambda: meta + 1) == nothing  # not the CPU's values

    def fails():
        torch.ones(2).sum()
        raise ValueError("user code")

    with pytest.raises(ValueError, match="user code"):
        denormals.op_inputs_census(fails)
    assert torch.ones(1).add(1).item() == 2.0  # the mode is gone after the error
