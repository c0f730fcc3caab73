"""MT-HM3D: explore an HM3D scene, answer a multi-target question (docs: its README.md)."""

from eqa_runner.benchmarks.mt_hm3d.config import SCHEMAS
from eqa_runner.registry import Benchmark

BENCHMARK = Benchmark(
    name="mt_hm3d",
    title="MT-HM3D (MemoryEQA): explore an HM3D scene, answer a multi-target question",
    task="eqa_runner.benchmarks.mt_hm3d.task.MTHM3DTask",
    judge="mt_hm3d",
    protocol="mt_hm3d",
    schemas=SCHEMAS,
    data="eqa_runner.benchmarks.mt_hm3d.data",
    demo="eqa_runner.benchmarks.mt_hm3d.demo.write_mt_hm3d_demo",
    docs="eqa_runner/benchmarks/mt_hm3d/README.md",
    conf_dir="pkg://eqa_runner.benchmarks.mt_hm3d.conf",
    upstream="eqa_runner.benchmarks.mt_hm3d.upstream.MTHM3DResults",
)
