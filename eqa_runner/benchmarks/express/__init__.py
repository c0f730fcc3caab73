"""EXPRESS-Bench: explore an HM3D scene from a recorded pose, then answer (docs: its README.md)."""

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
    docs="eqa_runner/benchmarks/express/README.md",
    conf_dir="pkg://eqa_runner.benchmarks.express.conf",
    upstream="eqa_runner.benchmarks.express.upstream.ExpressResults",
    original_prompts={  # sha256 of the stripped text -> upstream repo@commit path
        "072253982cbe4ab75328bd2b906589a5b4c7281200330290dcb0b3a0aae1f29b": (
            "HCPLab-SYSU/EXPRESS-Bench@e8789da prompt/answer.txt"
        ),
        "ef7137bfc7c6a4cf298d5de8a4f8576830187d8cb17869e3cdaaf476d01c2c94": (
            "HCPLab-SYSU/EXPRESS-Bench@e8789da prompt/evaluation.txt"
        ),
        "b73b27a59ae0be797203a661eeebda4100d506fda39306d1ff62b6c3c35d6f6c": (
            "HCPLab-SYSU/EXPRESS-Bench@e8789da prompt/explore.txt"
        ),
        "b25dd719e2371ae69e9078cf46529479d510467823a7f6c9b479e83115f65ef7": (
            "HCPLab-SYSU/EXPRESS-Bench@e8789da prompt/random_answer.txt"
        ),
    },
    moved={
        "eqa_runner.scoring.express_eac.EACJudge": "eqa_runner.benchmarks.express.eac.EACJudge"
    },  # before the one-package layout
)
