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
    # lmms-eval's post-prompts (_default_template_yaml) in our template layout: a task.prompts_dir
    # holding them as mca.txt / na.txt is recorded as the benchmark's original (README: Prompt)
    original_prompts={
        "b6f3f196605507e1d84465682b2638c36f7d43768510962fba43d842feae8caf": (
            "EvolvingLMMs-Lab/lmms-eval@75571cf vsibench mca_post_prompt (default)"
        ),
        "50b4f9f7475af00d9e328b9ca597e58edae304b6ee89a1d2bdccd5184a22a820": (
            "EvolvingLMMs-Lab/lmms-eval@75571cf vsibench na_post_prompt (default)"
        ),
        "eb16ac910103e81ec6070fe021f8a7c5a0e655ad409b77bdd072c6b7a86b8d56": (
            "EvolvingLMMs-Lab/lmms-eval@75571cf vsibench na_post_prompt (gpt4v, gemini_api)"
        ),
    },
)
