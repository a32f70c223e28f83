"""Every setting put around each timed call of a user workload (an ``AroundCalls`` setting: hooks=off,
tracing=off, ...) is refused by a ``@benchctl.workload`` function, which times its own iterations and so has no call
to wrap; switched back, the workload runs as written."""

import pytest

from benchctl import ArgumentError, settings, _workloads as workloads
from benchctl._run.recorder import Recorder
from benchctl._setting import AroundCalls

AROUND_CALLS = sorted(name for name, s in settings.SETTINGS.items() if isinstance(s, AroundCalls))


def test_the_settings_put_around_each_call_are_found():
    assert {"hooks", "saved_hooks", "grad_hooks", "tracing", "gc", "train_mode"} <= set(AROUND_CALLS)


@pytest.mark.parametrize("name", AROUND_CALLS)
def test_a_workload_that_times_itself_refuses_the_setting(name):
    setting = settings.SETTINGS[name]

    @workloads.user.workload()
    def own_loop(rec):
        with rec.iteration("x"):
            pass

    run, _ = workloads.user._decorated_workload(own_loop, own_loop.__benchctl_workload__)
    setting.apply(setting.probe)
    try:
        with pytest.raises(ArgumentError, match=f"{name}={setting.probe}: each timed call .* times its own iterations"):
            run({}, Recorder())
    finally:
        setting.switch(setting.unapplied)
    run({}, Recorder())  # as written without the setting
