"""The cause "memory-layout conversions": the layout-changing copies of a profiled call, its pre-check and
its evidence-only judgement on synthetic facts."""

import statistics

import torch

from benchctl._results import queries, rules
from benchctl._results.analysis import analyse
from benchctl._results.facts import Facts, LayoutCopy, OpRow
from benchctl._results.findings import Status
from benchctl._causes.memory_format import rule as memory_format
from benchctl._workloads import layout_copies
from synthetic_results import make_doc

BACK = LayoutCopy((8, 16, 56, 56), "channels_last", "contiguous", "aten::contiguous", 1, 3_000.0)


def facts(copy_us, copies=(BACK,), shares=None):
    table = (OpRow("aten::mkldnn_convolution", ("float",), 1, 10_000.0 - copy_us),
             OpRow("aten::copy_", ("float",), 1, copy_us))
    copies = tuple(LayoutCopy(c.shape, c.source, c.to, c.via, c.calls, copy_us) for c in copies)
    return Facts(phases=["run"], median_ms={"run": 10.0}, op_table=table, call_wall_us=10_000.0,
                 layout_copies=copies, layout_copy_shares=tuple(shares or ()))


def judge(f):
    doc = analyse(make_doc({"with": [{}]}, factor=lambda c: 1.0, phase="run", control=True))
    return memory_format.MemoryFormat().judge_phase(rules.Context(doc, "run", queries.Comparisons(doc), facts=f))


def test_layouts_from_strides():
    assert layout_copies.layout([2, 3, 4, 5], [60, 20, 5, 1]) == layout_copies.CONTIGUOUS
    assert layout_copies.layout([2, 3, 4, 5], [60, 1, 15, 3]) == layout_copies.CHANNELS_LAST
    assert layout_copies.layout([3, 4], [1, 3]) == layout_copies.STRIDED
    assert layout_copies.layout([1, 3, 1, 1], [3, 1, 3, 3]) == layout_copies.CONTIGUOUS  # size-1 dims: any stride


def _profiled(call):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        call()
    return [LayoutCopy.from_json(r) for r in layout_copies.rows(prof.events())]


def test_a_channels_last_conv_fed_contiguous_input_and_made_contiguous_again_copies_twice():
    conv = torch.nn.Conv2d(4, 4, 3, padding=1).to(memory_format=torch.channels_last)
    x = torch.randn(2, 4, 16, 16)
    with torch.no_grad():
        found = _profiled(lambda: conv(x).contiguous())
    pairs = {(c.source, c.to, c.via) for c in found}
    assert ("contiguous", "channels_last", "aten::conv2d") in pairs
    assert ("channels_last", "contiguous", "aten::contiguous") in pairs
    assert all(c.shape == (2, 4, 16, 16) and c.calls == 1 for c in found)


def test_copies_that_keep_the_layout_are_not_conversions():
    x, out = torch.randn(2, 4, 16, 16), torch.empty(2, 4, 16, 16)
    assert _profiled(lambda: (out.copy_(x), x.clone(), x.to(torch.float64))) == []


def test_a_broadcast_copied_into_place_is_a_fill_not_a_conversion():
    # Linear's addmm copies its expanded bias (strides [0, 1]) into its output before the product: that was
    # reported as "8x64 strided -> contiguous in aten::linear", 5-12% of small Linear stacks' op time.
    model, x = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 64)).eval(), torch.randn(8, 64)
    with torch.no_grad():
        assert _profiled(lambda: model(x)) == []
        transposed = _profiled(lambda: x.t().contiguous())  # a real layout copy beside it is still found
    assert [(c.shape, c.source, c.to) for c in transposed] == [((64, 8), "strided", "contiguous")]


def test_precheck_rules_out_no_or_negligible_copies_and_keeps_a_large_share():
    assert "no copy in its profiled call changes" in memory_format.MemoryFormat().precheck(facts(0.0, copies=()), None)
    assert "take 1% of its op time (its one profiled call)" in memory_format.MemoryFormat().precheck(facts(100.0), None)
    assert memory_format.MemoryFormat().precheck(facts(3_000.0), None) is None
    assert "not known" in memory_format.MemoryFormat().precheck(Facts(phases=["run"]), None)


def test_judged_a_cause_with_the_share_and_the_copies_open_below_its_share():
    found = judge(facts(3_000.0))
    assert found.status is Status.CAUSE and found.comparison is None
    assert ("copies that change a tensor's memory layout take 30% of its op time (its one profiled call): "
            "1× 8x16x56x56 channels_last → contiguous in aten::contiguous (3 ms)") in found.message
    assert memory_format.MECHANISM in found.message and "evidence only" in found.message
    # A transposed view made contiguous in every call (a 2048x2048 x.t().contiguous() before a matmul, 75% of the
    # op time): the channels_last advice does not apply, and the words say what does.
    transposed = LayoutCopy((2048, 2048), "strided", "contiguous", "aten::contiguous", 1, 3_000.0)
    strided = judge(facts(3_000.0, copies=(transposed,)))
    assert strided.status is Status.CAUSE and memory_format.STRIDED_MECHANISM in strided.message
    assert "channels_last" not in strided.message.split(": ", 1)[1]  # the title names both kinds
    assert judge(facts(1_000.0)).status is Status.UNCONFIRMED
    assert judge(facts(100.0)).status is Status.NOT_CAUSE


def test_the_median_of_the_profiled_calls_is_weighed_not_the_first_call_alone():
    # CI, 2026-12-04: the one profiled call of tests/planted/channels_last_copies.py spent 17% in conversions
    # (its convolution ran twice as long in that call) where its other calls spent 25-46%.
    found = judge(facts(1_700.0, shares=[0.17, 0.33, 0.30, 0.45, 0.26]))
    assert found.status is Status.CAUSE, found.message
    assert "take 30% of its op time (the median of 5 profiled calls: 17-45%)" in found.message
    assert found.evidence["layout_copy_shares"] == [0.17, 0.33, 0.30, 0.45, 0.26]
    # ... and the median rules out what one call alone would keep open.
    assert judge(facts(3_000.0, shares=[0.3, 0.02, 0.03])).status is Status.NOT_CAUSE
    assert "take 3% of its op time (the median of 3" in memory_format.MemoryFormat().precheck(
        facts(3_000.0, shares=[0.3, 0.02, 0.03]), None)


def _first_profiled(call):
    """The layout-copy share of the probe worker's profiled call of ``call`` (its session marked intact)."""
    from benchctl._workloads import op_table

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        call()
        with torch.profiler.record_function(op_table.INTACT_MARK):
            pass
    return layout_copies.share(prof.events())


def test_more_calls_are_profiled_where_the_first_had_conversions():
    conv = torch.nn.Conv2d(4, 4, 3, padding=1).to(memory_format=torch.channels_last)
    x = torch.randn(2, 4, 16, 16)
    calls = []

    @torch.no_grad()
    def call():
        calls.append(1)
        return conv(x).contiguous()

    shares = layout_copies.shares_over_calls(call, _first_profiled(call))
    assert len(calls) == 1 + layout_copies.MORE_CALLS  # a call of microseconds: every more call runs
    assert len(shares) == 1 + layout_copies.MORE_CALLS and all(0 < s <= 1 for s in shares)
    saved = Facts.from_json(Facts(layout_copy_shares=tuple(shares)).to_json())
    assert saved.layout_copy_shares == tuple(shares) and saved.layout_copy_share() == statistics.median(shares)


def test_no_more_calls_without_conversions():
    x, out = torch.randn(2, 4, 16, 16), torch.empty(2, 4, 16, 16)
    calls = []

    def call():
        calls.append(1)
        out.copy_(x)

    assert layout_copies.shares_over_calls(call, _first_profiled(call)) == [] and calls == [1]
    assert Facts.from_json({"layout_copy_shares": [float("nan"), 2.0, 0.5]}).layout_copy_shares == (0.5,)
