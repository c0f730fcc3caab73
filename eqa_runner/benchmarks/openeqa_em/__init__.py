"""OpenEQA, episodic-memory mode: K frames of a recorded episode (docs: docs/data.md)."""

from eqa_runner.benchmarks.openeqa_em.config import SCHEMAS
from eqa_runner.registry import Benchmark

BENCHMARK = Benchmark(
    name="openeqa_em",
    short="openeqa",
    title="OpenEQA, episodic-memory mode: K frames of a recorded episode",
    task="eqa_runner.benchmarks.openeqa_em.task.OpenEQATask",
    judge="llm_match",
    protocol=None,
    schemas=SCHEMAS,
    data="eqa_runner.benchmarks.openeqa_em.data",
    demo="eqa_runner.benchmarks.openeqa_em.demo.write_openeqa_demo",
    docs="docs/data.md",
    upstream="eqa_runner.benchmarks.openeqa_em.upstream.OpenEQAPredictions",
)
