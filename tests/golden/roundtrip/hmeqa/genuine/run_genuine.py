"""Runs explore-eqa's run_vlm_exp.py (Stanford-ILIAD/explore-eqa @18381da, unmodified) with
`src.vlm` replaced by stub_vlm.py (the VLM model class only): habitat-sim, the TSDF planner,
the visual prompting, its loop and its results.pkl writing are upstream's. Its own
cfg/vlm_exp.yaml, with only the paths, `save_obs` and the device changed (OVERRIDES). In the
habitat-sim 0.2.2 CPU chroot (numpy 1.26.4, numba, scikit-image, scikit-learn, omegaconf):

    python run_genuine.py <explore-eqa checkout> <data dir: questions.csv, scene_init_poses.csv,
                          scenes/> <output parent dir>
"""

import os
import runpy
import sys
from pathlib import Path

from omegaconf import OmegaConf

here = Path(__file__).resolve().parent
checkout, data, out = (Path(a).resolve() for a in sys.argv[1:4])
OVERRIDES = {
    "exp_name": "genuine",
    "output_parent_dir": str(out),
    "question_data_path": str(data / "questions.csv"),
    "init_pose_data_path": str(data / "scene_init_poses.csv"),
    "scene_data_path": str(data / "scenes"),
    "save_obs": False,
    "vlm": {"device": "cpu"},
}
cfg = OmegaConf.merge(OmegaConf.load(checkout / "cfg" / "vlm_exp.yaml"), OVERRIDES)
out.mkdir(parents=True, exist_ok=True)
OmegaConf.save(cfg, out / "vlm_exp.yaml")

sys.path.insert(0, str(here))
import stub_vlm  # noqa: E402

sys.modules["src.vlm"] = stub_vlm  # the model class only; every other module is upstream's
os.chdir(checkout)  # its font path is relative to the checkout
sys.path.insert(0, str(checkout))
sys.argv = ["run_vlm_exp.py", "-cf", str(out / "vlm_exp.yaml")]
runpy.run_path(str(checkout / "run_vlm_exp.py"), run_name="__main__")
