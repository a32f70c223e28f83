"""benchctl._cli.interrupts: Ctrl-C held over torch's import (where it would abort the process), then raised."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from benchctl._cli import interrupts


def test_a_ctrl_c_inside_is_held_to_the_end_of_the_block_and_raised_there():
    before = signal.getsignal(signal.SIGINT)
    reached = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts.held():
            os.kill(os.getpid(), signal.SIGINT)
            reached.append("after the signal")  # not interrupted here
    assert reached == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is before


def test_nothing_is_raised_without_a_ctrl_c_and_the_handler_comes_back_after_an_error():
    before = signal.getsignal(signal.SIGINT)
    with interrupts.held():
        pass
    with pytest.raises(ValueError):
        with interrupts.held():
            raise ValueError("the block's own error")
    assert signal.getsignal(signal.SIGINT) is before


def test_import_torch_holds_a_ctrl_c_that_comes_during_the_import():
    # A fresh interpreter whose torch import sends itself SIGINT halfway: held, then one KeyboardInterrupt.
    code = textwrap.dedent("""
        import os, signal, sys
        import builtins
        real_import = builtins.__import__
        def spy(name, *args, **kwargs):
            if name == "torch._C":
                os.kill(os.getpid(), signal.SIGINT)
            return real_import(name, *args, **kwargs)
        builtins.__import__ = spy
        from benchctl._cli import interrupts
        try:
            interrupts.import_torch()
        except KeyboardInterrupt:
            print("raised after", "torch" in sys.modules and hasattr(sys.modules["torch"], "Tensor"))
    """)
    pytest.importorskip("torch")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "raised after True", out.stderr
