"""HM-EQA: explore one floor of an HM3D scene, pick one of four options (docs: its README.md)."""

from eqa_runner.benchmarks.hmeqa.config import SCHEMAS
from eqa_runner.registry import Benchmark

BENCHMARK = Benchmark(
    name="hmeqa",
    title="HM-EQA: explore one floor of an HM3D scene, pick one of four options",
    task="eqa_runner.benchmarks.hmeqa.task.HMEQATask",
    judge="hmeqa",
    protocol="hmeqa",
    schemas=SCHEMAS,
    data="eqa_runner.benchmarks.hmeqa.data",
    demo="eqa_runner.benchmarks.hmeqa.demo.write_hmeqa_demo",
    docs="eqa_runner/benchmarks/hmeqa/README.md",
    conf_dir="pkg://eqa_runner.benchmarks.hmeqa.conf",
    upstream="eqa_runner.benchmarks.hmeqa.upstream.HMEQAResults",
    moved={
        "eqa_runner.scoring.hmeqa.HMEQAJudge": "eqa_runner.benchmarks.hmeqa.judge.HMEQAJudge"
    },  # before the one-package layout
)
