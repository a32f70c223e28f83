"""Errors as a protocol: every error class has a kind, each kind its exit status, and only a refusal is not retried."""

import argparse
import importlib
import inspect
import io
import pkgutil

import pytest

import benchctl
from benchctl import _cli as cli, errors, fpenv
from benchctl.errors import ExitCode
from benchctl._results import document, manifest
from benchctl._run import slurm
from benchctl._run.slurm import controller


def _benchctl_modules():
    for info in pkgutil.walk_packages(benchctl.__path__, "benchctl."):
        if info.name not in ("benchctl.__main__",):
            yield importlib.import_module(info.name)


def test_every_error_class_of_benchctl_has_exactly_one_exit_status_from_its_kind():
    found = {}
    for module in _benchctl_modules():
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__.startswith("benchctl"):
                found[cls.__qualname__] = cls
    # The native core's CudaError is bound in C++ and wrapped (cuda.CudaUnavailable) where it reaches a user.
    found.pop("CudaError", None)
    kinds = (errors.Error, errors.UserError, errors.UnavailableError)
    unrooted = sorted(name for name, cls in found.items()
                      if cls not in kinds and not issubclass(cls, (errors.UserError, errors.UnavailableError)))
    assert not unrooted, f"error classes without a kind: {unrooted}"
    assert {name for name, cls in found.items() if errors.exit_code_of(cls("x")) is ExitCode.USER_ERROR} >= {
        "ArgumentError", "SettingError", "ResultsError", "MarkerError", "WorkloadFailed", "ExecutorError"}
    assert {name for name, cls in found.items() if errors.exit_code_of(cls("x")) is ExitCode.UNAVAILABLE} >= {
        "AllocatorError", "CudaUnavailable", "WeightsUnavailable", "SettingUnavailable", "FPControlUnavailable",
        "MissingPackage", "ExecutorUnavailable"}


def test_the_error_classes_keep_the_builtin_bases_their_callers_catch():
    assert issubclass(benchctl.ArgumentError, ValueError) and issubclass(benchctl.ArgumentError, TypeError)
    assert issubclass(document.ResultsError, ValueError) and issubclass(slurm.ExecutorError, ValueError)
    assert issubclass(benchctl.cuda.CudaUnavailable, RuntimeError) and issubclass(errors.MissingPackage, RuntimeError)
    # An environment error that is also its module's error keeps the environment's status.
    from benchctl.settings import SettingError, SettingUnavailable
    assert issubclass(SettingUnavailable, SettingError) and SettingUnavailable.exit_code is ExitCode.UNAVAILABLE
    assert issubclass(slurm.ExecutorUnavailable, slurm.ExecutorError)
    assert slurm.ExecutorUnavailable.exit_code is ExitCode.UNAVAILABLE


def test_a_user_error_exits_2_with_its_message(tmp_path, capsys):
    rc = cli.main(["report", str(tmp_path / "missing.json")])
    err = capsys.readouterr().err
    assert rc == ExitCode.USER_ERROR == 2
    assert err.startswith("report: ") and "no such results file" in err and "Traceback" not in err


def test_a_bug_shaped_value_error_is_a_traceback_and_not_the_refusal_status(tmp_path, monkeypatch, capsys):
    def broken(path):
        raise ValueError("an index went wrong deep inside")

    monkeypatch.setattr(document, "load", broken)
    rc = cli.main(["report", str(tmp_path / "any.json")])
    err = capsys.readouterr().err
    assert rc == ExitCode.INTERNAL_ERROR and rc != ExitCode.USER_ERROR
    assert "Traceback (most recent call last)" in err and "ValueError: an index went wrong deep inside" in err
    assert "internal error" in err


def test_an_environment_error_exits_with_its_own_status(monkeypatch, capsys):
    monkeypatch.setattr(fpenv, "supported", lambda: (False, "no FP control register on this test's CPU"))
    rc = cli.main(["run", "sleep", "--set", "ftz=off,thread", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == ExitCode.UNAVAILABLE == 3, err
    assert "run: ftz cannot be applied here: no FP control register" in err and "Traceback" not in err


def test_ctrl_c_exits_130(monkeypatch, capsys):
    def interrupted(path):
        raise KeyboardInterrupt

    monkeypatch.setattr(document, "load", interrupted)
    assert cli.main(["report", "x.json"]) == ExitCode.INTERRUPTED == 130
    assert "interrupted" in capsys.readouterr().err


# ---- the Slurm controller's retry rule reads the named statuses ---------------------------------------


class _Job:
    """A finished submitit job whose command exited with ``status``."""

    def __init__(self, job_id, status):
        self.job_id, self.status, self.state = job_id, status, "COMPLETED"

    def done(self):
        return True

    def result(self):
        return {"exit_status": int(self.status), "requeues": 0, "hostname": "node1", "cpus": None}

    def stderr(self):
        return f"exit status {int(self.status)}"


class _Executor:
    """Every job it submits exits with ``status``; ``submitted`` counts them."""

    def __init__(self, status):
        self.status, self.submitted = status, 0

    def __call__(self, folder, target, plan):
        return self

    def submit(self, run):
        self.submitted += 1
        return _Job(str(1000 + self.submitted), self.status)


@pytest.mark.parametrize("status", [ExitCode.USER_ERROR, ExitCode.UNAVAILABLE, ExitCode.INTERNAL_ERROR])
def test_only_a_refused_command_is_not_resubmitted(tmp_path, status):
    opts = argparse.Namespace(slurm=[], hosts=None, json_path=str(tmp_path / "out"), resume=False, plot=None)
    plan = slurm.plan_hosts(opts, ["run", "sleep"], ["python", "-m", "benchctl"])
    executor = _Executor(status)
    said = io.StringIO()
    hosts = controller.collect(plan, controller.submit(plan, executor, out=said), executor, poll_s=0, out=said)
    retried = status not in errors.NO_RETRY
    assert executor.submitted == (2 if retried else 1), said.getvalue()
    host = manifest.load(plan.manifest_path)["hosts"][0]
    assert hosts[0].status is manifest.HostState.FAILED and host["status"] == "failed"
    assert f"exit status {int(status)}" in host["message"]
    assert ("refused" in host["message"]) == (status is ExitCode.USER_ERROR)
