"""VSI-Bench: questions on scene videos, K sampled frames (docs: its README.md)."""

from eqa_runner.benchmarks.vsibench.config import SCHEMAS
from eqa_runner.registry import Benchmark

BENCHMARK = Benchmark(
    name="vsibench",
    title="VSI-Bench: spatial questions on egocentric scene videos, K sampled frames",
    task="eqa_runner.benchmarks.vsibench.task.VSIBenchTask",
    judge="vsibench",
    protocol=None,
    schemas=SCHEMAS,
    data="eqa_runner.benchmarks.vsibench.data",
    demo="eqa_runner.benchmarks.vsibench.demo.write_vsibench_demo",
    docs="eqa_runner/benchmarks/vsibench/README.md",
    conf_dir="pkg://eqa_runner.benchmarks.vsibench.conf",
    upstream="eqa_runner.benchmarks.vsibench.upstream.VSIBenchSamples",
)
