"""MP3D-EQA v1 (habitat-lab's ``EQA-v0`` task on Matterport3D) as an eqa_runner plugin.

Installed next to eqa_runner, this package adds ``task=mp3d_eqa`` (with its judge, exploration
protocol, camera and experiment presets) through the entry point ``eqa_runner.benchmarks``:
``BENCHMARK`` below is all eqa_runner reads of it. Docs: the package's README.md.
"""

from eqa_runner.registry import Benchmark
from eqa_runner_mp3d_eqa.config import SCHEMAS

__version__ = "0.1.0"

BENCHMARK = Benchmark(
    name="mp3d_eqa",
    title="MP3D-EQA v1: explore a Matterport3D house, answer in one word (habitat-lab EQA-v0)",
    task="eqa_runner_mp3d_eqa.task.MP3DEQATask",
    judge="mp3d_eqa",
    protocol="mp3d_eqa",
    schemas=SCHEMAS,
    data="eqa_runner_mp3d_eqa.data",
    demo="eqa_runner_mp3d_eqa.demo.write_mp3d_eqa_demo",
    docs="plugins/eqa-runner-mp3d-eqa/README.md",
    conf_dir="pkg://eqa_runner_mp3d_eqa.conf",
)
