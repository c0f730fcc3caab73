"""EXPRESS-Bench: explore an HM3D scene from a recorded pose, then answer (docs/express.md)."""

from eqa_runner.benchmarks.express.config import SCHEMAS
from eqa_runner.registry import Benchmark

BENCHMARK = Benchmark(
    name="express",
    title="EXPRESS-Bench: explore an HM3D scene from a recorded pose, then answer",
    task="eqa_runner.benchmarks.express.task.ExpressTask",
    judge="eac",
    protocol="express",
    schemas=SCHEMAS,
    data="eqa_runner.benchmarks.express.data",
    demo="eqa_runner.benchmarks.express.demo.write_express_demo",
    docs="docs/express.md",
    upstream="eqa_runner.benchmarks.express.upstream.ExpressResults",
)
