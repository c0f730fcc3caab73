"""OpenEQA, episodic-memory mode: K frames of a recorded episode (docs: its README.md)."""

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
    docs="eqa_runner/benchmarks/openeqa_em/README.md",
    conf_dir="pkg://eqa_runner.benchmarks.openeqa_em.conf",
    upstream="eqa_runner.benchmarks.openeqa_em.upstream.OpenEQAPredictions",
    original_prompts={  # sha256 of the stripped text -> upstream repo@commit path
        "45a46482c17a217d304b10f6849100a258f10b873d7e13373587bd6c680876cd": (
            "facebookresearch/open-eqa@cfa3fce prompts/blind-llm.txt"
        ),
        "7d3687b7270e088defcff5750dc0103264f9d7fe9fb40501cf516dd676e1372b": (
            "facebookresearch/open-eqa@cfa3fce prompts/gpt4v.txt"
        ),
        "52d45f6ab14192af88903d43f2d83f83f1a77b5b6350e9878a8e2fdb640e1cdf": (
            "facebookresearch/open-eqa@cfa3fce prompts/mmbench.txt"
        ),
        "6bd42d3f018277b8cded4b94892032cae1dd828d6a09d64918475b4530c7ce67": (
            "facebookresearch/open-eqa@cfa3fce prompts/mmbench-extra.txt"
        ),
    },
    moved={
        "eqa_runner.scoring.llm_match.LLMMatchJudge": (
            "eqa_runner.benchmarks.openeqa_em.llm_match.LLMMatchJudge"
        )
    },  # before the one-package layout
)
