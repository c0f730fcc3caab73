"""A-EQA: OpenEQA's active mode, explore an HM3D scene, answer in free form (docs: README.md)."""

from eqa_runner.benchmarks.aeqa.config import SCHEMAS
from eqa_runner.registry import Benchmark

BENCHMARK = Benchmark(
    name="aeqa",
    title="A-EQA: OpenEQA's active mode, explore an HM3D scene, answer in free form",
    task="eqa_runner.benchmarks.aeqa.task.AEQATask",
    judge="aeqa",
    protocol="aeqa",
    schemas=SCHEMAS,
    data="eqa_runner.benchmarks.aeqa.data",
    demo="eqa_runner.benchmarks.aeqa.demo.write_aeqa_demo",
    docs="eqa_runner/benchmarks/aeqa/README.md",
    conf_dir="pkg://eqa_runner.benchmarks.aeqa.conf",
    upstream="eqa_runner.benchmarks.aeqa.upstream.AEQAPredictions",
    moved={
        "eqa_runner.scoring.aeqa.AEQAJudge": "eqa_runner.benchmarks.aeqa.judge.AEQAJudge"
    },  # before the one-package layout
)
