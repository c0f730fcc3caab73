"""The sacct stand-in (tests/slurm/sacct) against a fake ``scontrol``: no cluster needed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SACCT = Path(__file__).resolve().parent / "sacct"

pytestmark = [  # each test runs the bash stand-in
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("bash") is None or shutil.which("awk") is None, reason="needs bash and awk"
    ),
]

# `scontrol -o show job` lines (trimmed to the fields the stand-in reads; real lines have more).
SCONTROL = """\
JobId=11 JobName=wrap UserId=root(0) JobState=COMPLETED ExitCode=0:0 NodeList=localhost NumCPUs=1
JobId=12 JobName=my job UserId=root(0) JobState=FAILED ExitCode=3:0 NodeList=localhost NumCPUs=1
JobId=13 JobName=wrap JobState=CANCELLED Reason=None ExitCode=0:15 NodeList=(null)
JobId=14 JobName=wrap JobState=TIMEOUT Reason=TimeLimit ExitCode=0:0 NodeList=localhost
JobId=15 JobName=wrap JobState=OUT_OF_MEMORY Reason=OutOfMemory ExitCode=0:125 NodeList=localhost
JobId=16 JobName=wrap JobState=PENDING Reason=BeginTime Restarts=1 NodeList=(null)
JobId=17 JobName=wrap JobState=REQUEUE_HOLD Reason=JobHeldAdmin NodeList=(null)
JobId=18 JobName=wrap JobState=PREEMPTED Reason=None NodeList=localhost
JobId=19 JobName=wrap JobState=CONFIGURING Reason=None NodeList=localhost
JobId=21 ArrayJobId=20 ArrayTaskId=0 JobName=arr JobState=COMPLETED NodeList=localhost
JobId=22 ArrayJobId=20 ArrayTaskId=1 JobName=arr JobState=RUNNING NodeList=localhost
JobId=20 ArrayJobId=20 ArrayTaskId=2-5%2 JobName=arr JobState=PENDING NodeList=(null)
"""
# jobcomp/filetxt lines: 11 is also live (live wins); 9 and 31 (array 30, task 4) are only here.
JOBCOMP = """\
JobId=11 Name=wrap JobState=FAILED Partition=debug NodeList=localhost ExitCode=1:0
JobId=9 Name=old JobState=COMPLETED Partition=debug NodeList=localhost ExitCode=0:0
JobId=31 Name=arr JobState=NODE_FAIL NodeList=localhost ArrayJobId=30 ArrayTaskId=4
"""


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "jobs.txt").write_text(SCONTROL)
    (tmp_path / "jobcomp.txt").write_text(JOBCOMP)
    scontrol = bin_dir / "scontrol"
    scontrol.write_text(f"#!/bin/sh\ncat {tmp_path / 'jobs.txt'}\n")
    scontrol.chmod(0o755)
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"ClusterName=x\nJobCompLoc={tmp_path / 'jobcomp.txt'}\n")
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "SLURM_CONF": str(conf),
    }


def run(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        [str(SACCT), *args], env=env, capture_output=True, text=True, timeout=30, check=True
    ).stdout


def states(env: dict[str, str], *job_ids: str) -> dict[str, str]:
    """Query exactly like submitit and parse with submitit's own reader."""
    from submitit.slurm.slurm import SlurmInfoWatcher

    args = ["-o", "JobID,State,NodeList", "--parsable2"]
    for jid in job_ids:
        args += ["-j", jid]
    return {k: v["State"] for k, v in SlurmInfoWatcher().read_info(run(env, *args)).items()}


def test_states_spelled_like_sacct(env: dict[str, str]) -> None:
    got = states(env, *(str(i) for i in range(11, 20)))
    assert got == {
        "11": "COMPLETED",
        "12": "FAILED",
        "13": "CANCELLED",
        "14": "TIMEOUT",
        "15": "OUT_OF_MEMORY",
        "16": "PENDING",
        "17": "REQUEUED",
        "18": "PREEMPTED",
        "19": "RUNNING",
    }


def test_array_tasks_and_pending_range(env: dict[str, str]) -> None:
    out = run(env, "-o", "JobID,State,NodeList", "--parsable2", "-j", "20")
    assert out.splitlines() == [
        "JobID|State|NodeList",
        "20_0|COMPLETED|localhost",
        "20_1|RUNNING|localhost",
        "20_[2-5%2]|PENDING|None assigned",
    ]
    got = states(env, "20")
    assert got["20_0"] == "COMPLETED" and got["20_1"] == "RUNNING"
    assert {got[f"20_{i}"] for i in range(2, 6)} == {"PENDING"}


def test_task_filter_and_steps(env: dict[str, str]) -> None:
    assert states(env, "20_1") == {"20_1": "RUNNING"}
    assert list(states(env, "20_4")) == ["20_2", "20_3", "20_4", "20_5"]  # inside the range
    assert states(env, "12.batch") == {"12": "FAILED"}
    assert states(env, "999") == {}


def test_jobcomp_fallback_for_forgotten_jobs(env: dict[str, str]) -> None:
    got = states(env, "9", "11", "30")
    assert got == {"9": "COMPLETED", "11": "COMPLETED", "30_4": "NODE_FAIL"}


def test_formats(env: dict[str, str]) -> None:
    out = run(env, "-j", "12", "-o", "JobID,JobName,ExitCode,User,AllocCPUS", "-p", "-n")
    assert out == "12|my job|3:0|root|1|\n"
    table = run(env, "-j", "11").splitlines()
    assert table[0].split() == [
        "JobID",
        "JobName",
        "Partition",
        "Account",
        "AllocCPUS",
        "State",
        "ExitCode",
    ]
    assert table[2].split()[0] == "11" and "COMPLETED" in table[2]


def test_scontrol_failure_is_an_error(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "scontrol").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run([str(SACCT), "-j", "1"], env=env, capture_output=True, text=True)
    assert proc.returncode == 1 and "scontrol" in proc.stderr
